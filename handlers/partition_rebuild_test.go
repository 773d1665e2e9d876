package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/tessera-dev/tessera/auth"
)

// A partition page offers operators "Rebuild…": the new-backfill form with
// that partition selected, showing its preview on load; nothing launches
// until Launch. Viewers get no Rebuild… (and no Launch on the form).
func TestPartitionRebuildOpensThePrefilledForm(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	const partition = "/assets/t.daily/partitions/2025-01-05"
	viewer, op := env.Client(t, auth.RoleViewer), env.Client(t, auth.RoleOperator)
	if _, doc := pgGet(t, env, viewer, partition); doc.Find(`[data-testid="rebuild"]`).Length() != 0 {
		t.Error("a viewer is offered Rebuild…")
	}
	_, doc := pgGet(t, env, op, partition)
	link := doc.Find(`[data-testid="rebuild"]`)
	if link.Length() != 1 || link.Text() != "Rebuild…" {
		t.Fatalf("an operator's partition page has %d Rebuild… (%q)", link.Length(), link.Text())
	}
	href := link.AttrOr("href", "")
	u, err := url.Parse(href)
	if err != nil || u.Path != "/backfills/new" {
		t.Fatalf("Rebuild… leads to %q", href)
	}
	if q := u.Query(); q.Get("asset") != "t.daily" || q.Get("selector") != "explicit" || q.Get("keys") != "2025-01-05" {
		t.Errorf("Rebuild… preselects %v", q)
	}
	status, form := pgGet(t, env, op, href)
	if status != http.StatusOK {
		t.Fatalf("the form: %d", status)
	}
	if _, ok := form.Find(`[data-testid="selector-explicit"]`).Attr("checked"); !ok {
		t.Error("the form does not tick the explicit list")
	}
	if _, ok := form.Find(`input[name="asset"][value="t.daily"]`).Attr("checked"); !ok {
		t.Error("the form does not tick t.daily")
	}
	if keys := form.Find(`[data-testid="keys"]`).Text(); keys != "2025-01-05" {
		t.Errorf("the form's keys %q", keys)
	}
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "1" {
		t.Errorf("the preview counts %q partitions, want 1", n)
	}
	if form.Find(`[data-testid="launch"]`).Length() != 1 {
		t.Error("no Launch for an operator")
	}
	// Opening the form launched nothing.
	if bs, err := env.Store.Backfills(context.Background(), nil, "", 0, 10); err != nil || len(bs) != 0 {
		t.Errorf("%d backfills after opening the form (%v)", len(bs), err)
	}
	if _, form = pgGet(t, env, viewer, href); form.Find(`[data-testid="launch"]`).Length() != 0 {
		t.Error("a viewer who types the address gets a Launch button")
	}
	// The grid's selection says the same word.
	if _, doc = pgGet(t, env, op, "/assets/t.daily?from=2025-01-01&to=2025-01-31"); doc.Find(`[data-testid="backfill-selection"]`).Text() != "Rebuild…" {
		t.Errorf("the grid selection's button reads %q", doc.Find(`[data-testid="backfill-selection"]`).Text())
	}
}
