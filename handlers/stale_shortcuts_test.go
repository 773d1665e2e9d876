package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

var staleShortcutsWS = testkit.Assets(
	testkit.Asset("sc.never", "{static: [a, b, c]}", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("sc.code", "{static: [a, b, c]}", "code_version: v2", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("sc.fresh", "{static: [a, b, c]}", "code_version: v1", "executor: {demo: {duration: 1s}}"),
)

// TestStaleShortcutsOnlyWhenSomethingToDo: the staleness panel offers
// "Backfill stale" only when a materialized partition is stale (never
// materialized ones are not "stale" for that selection, which was empty
// and refused at launch), saying why when it is left out, and offers
// nothing when every partition is fresh.
func TestStaleShortcutsOnlyWhenSomethingToDo(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, staleShortcutsWS, false)
	mat(t, env, "sc.never", "a", "v1", T0) // b and c never materialized
	for _, k := range []string{"a", "b", "c"} {
		mat(t, env, "sc.code", k, "v1", T0) // built with v1, the code is at v2
		mat(t, env, "sc.fresh", k, "v1", T0)
	}
	op := env.Client(t, auth.RoleOperator)
	for _, c := range []struct {
		asset                string
		stale, missing, none bool
	}{
		{"sc.never", false, true, true},
		{"sc.code", true, true, false},
		{"sc.fresh", false, false, false},
	} {
		code, doc := pgGet(t, env, op, "/assets/"+c.asset+"?view=staleness")
		if code != http.StatusOK {
			t.Fatalf("%s: %d", c.asset, code)
		}
		panel := doc.Find(`[data-testid="stale-panel"]`)
		has := func(id string) bool { return panel.Find(`[data-testid="`+id+`"]`).Length() == 1 }
		if has("backfill-stale") != c.stale || has("backfill-missing-stale") != c.missing || has("backfill-stale-none") != c.none {
			t.Errorf("%s: backfill-stale %v (want %v), backfill-missing-stale %v (want %v), reason %v (want %v): %q", c.asset,
				has("backfill-stale"), c.stale, has("backfill-missing-stale"), c.missing, has("backfill-stale-none"), c.none, squash(panel.Text()))
		}
		// What is offered previews a selection that is not empty.
		for _, id := range []string{"backfill-stale", "backfill-missing-stale"} {
			href, ok := panel.Find(`[data-testid="` + id + `"]`).Attr("href")
			if !ok {
				continue
			}
			_, form := pgGet(t, env, op, href)
			if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n == "" || n == "0" {
				t.Errorf("%s %s previews %q partitions: %q", c.asset, id, n, squash(form.Find(`.field-error, [data-testid="preview"]`).Text()))
			}
		}
	}
	// Viewers get no shortcut and no reason.
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/assets/sc.never?view=staleness")
	if doc.Find(`[data-testid="backfill-missing-stale"], [data-testid="backfill-stale-none"]`).Length() != 0 {
		t.Error("viewer sees backfill shortcuts")
	}
}

// TestPreviewDrawsStaleAsStale: the preview's status bars draw materialized
// partitions that are stale in the stale colour and label ("Materialized,
// stale 3"), as the overview and the asset grid do; before, they were solid
// "materialized" green under a small "of the materialized, 3 stale" (found
// by the UI audit).
func TestPreviewDrawsStaleAsStale(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, staleShortcutsWS, true)
	for _, k := range []string{"a", "b", "c"} {
		mat(t, env, "sc.code", k, "v1", T0) // built with v1, the code is at v2
	}
	_, doc := pgGet(t, env, env.Client(t, auth.RoleOperator), "/backfills/new?asset=sc.code&selector=range")
	bars := doc.Find(`#preview [data-testid="health-bar"]`)
	if bars.Length() < 2 {
		t.Fatalf("%d status bars in the preview, want the selection's and the asset's", bars.Length())
	}
	bars.Each(func(i int, s *goquery.Selection) {
		if label := s.AttrOr("aria-label", ""); !strings.Contains(label, "Materialized, stale 3") {
			t.Errorf("preview bar %d: %q, want its 3 stale partitions drawn as stale", i, label)
		}
	})
	if got := doc.Find(`[data-testid="preview-status-stale"]`).Text(); !strings.Contains(got, "3") {
		t.Errorf("the preview's stale count %q", got)
	}
}
