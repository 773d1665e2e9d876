package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

func TestBackfillsListFilterAndPages(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	var ids []string
	for i := range handlers.BackfillPageSize + 5 {
		d := fmt.Sprintf("2025-02-%02d", i%28+1)
		ids = append(ids, pgCreateBF(t, eng, "t.daily", d, d, 1).ID)
	}
	if _, err := eng.Transition(t.Context(), ids[0], jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/backfills")
	rows := doc.Find(`[data-testid="backfill-row"]`)
	if rows.Length() != handlers.BackfillPageSize {
		t.Fatalf("%d rows on the first page", rows.Length())
	}
	if rows.First().AttrOr("data-id", "") != ids[len(ids)-1] {
		t.Error("the list is not newest first")
	}
	if rows.First().Find(`[data-testid="progress-bar"]`).Length() != 1 {
		t.Error("a row has no progress bar")
	}
	if doc.Find(`[data-testid="new-backfill"]`).Length() != 0 {
		t.Error("a viewer is offered New backfill")
	}
	next, ok := doc.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatal("no next page link")
	}
	_, doc = pgGet(t, env, c, next)
	if n := doc.Find(`[data-testid="backfill-row"]`).Length(); n != 5 {
		t.Errorf("%d rows on the second page, want 5", n)
	}
	if doc.Find(`[data-testid="next-page"]`).Length() != 0 {
		t.Error("the last page links further")
	}
	_, doc = pgGet(t, env, c, "/backfills?state=PAUSED")
	if r := doc.Find(`[data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != ids[0] {
		t.Errorf("state filter: %d rows", r.Length())
	}
	if status, _ := pgGet(t, env, c, "/backfills?state=NOPE"); status != http.StatusBadRequest {
		t.Errorf("unknown state filter: %d", status)
	}
	// Asset filter: only the backfills selecting the asset; pages keep it; the
	// asset page links to it; the API filters the same way.
	flaky := pgCreateBF(t, eng, "t.flaky", "2025-01-01", "2025-01-01", 1)
	_, doc = pgGet(t, env, c, "/backfills?asset=t.flaky")
	if r := doc.Find(`[data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != flaky.ID {
		t.Errorf("asset filter t.flaky: %d rows", r.Length())
	}
	if doc.Find(`[data-testid="asset-filter"] option[selected]`).AttrOr("value", "") != "t.flaky" {
		t.Error("the asset filter does not show the chosen asset")
	}
	_, doc = pgGet(t, env, c, "/backfills?asset=t.daily")
	next, _ = doc.Find(`[data-testid="next-page"]`).Attr("href")
	if doc.Find(`[data-testid="backfill-row"]`).Length() != handlers.BackfillPageSize || !strings.Contains(next, "asset=t.daily") {
		t.Errorf("asset filter t.daily: %d rows, next %q", doc.Find(`[data-testid="backfill-row"]`).Length(), next)
	}
	if _, doc = pgGet(t, env, c, next); doc.Find(`[data-testid="backfill-row"]`).Length() != 5 {
		t.Errorf("asset filter, second page: %d rows", doc.Find(`[data-testid="backfill-row"]`).Length())
	}
	if status, _ := pgGet(t, env, c, "/backfills?asset=nope"); status != http.StatusBadRequest {
		t.Errorf("unknown asset filter: %d", status)
	}
	if _, doc = pgGet(t, env, c, "/assets/t.flaky"); doc.Find(`[data-testid="asset-backfills"]`).AttrOr("href", "") != "/backfills?asset=t.flaky" {
		t.Error("the asset page does not link to its backfills")
	}
	// The asset page lists the asset's unfinished backfills (at most 10).
	if r := doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != flaky.ID {
		t.Errorf("t.flaky's page lists %d active backfills", r.Length())
	}
	// Beside them, the page says its grid does not follow them and offers a
	// refresh (the UI audit took the grid for live: it was as of the load).
	if n := doc.Find(`[data-testid="grid-snapshot"] a[data-testid="grid-refresh"][href=""]`).Length(); n != 1 ||
		!strings.Contains(doc.Find(`[data-testid="grid-snapshot"]`).Text(), "as of when the page was loaded") {
		t.Errorf("t.flaky's page does not say its grid is as of its load")
	}
	if _, doc = pgGet(t, env, c, "/assets/t.daily"); doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).Length() != 10 {
		t.Errorf("t.daily's page lists %d active backfills, want 10", doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).Length())
	}
	if _, doc = pgGet(t, env, c, "/assets/t.cmd"); doc.Find(`[data-testid="asset-active-backfills"]`).Length() != 0 {
		t.Error("an asset without backfills shows an active backfills section")
	}
	// The live fragments: the asset page's section alone, and the list's
	// table alone with the page's filters and position.
	if status, doc := pgGet(t, env, c, "/assets/t.flaky/active-backfills"); status != http.StatusOK || doc.Find(`nav`).Length() != 0 ||
		doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).AttrOr("data-id", "") != flaky.ID {
		t.Errorf("asset active fragment: %d", status)
	}
	if status, doc := pgGet(t, env, c, "/assets/t.cmd/active-backfills"); status != http.StatusOK || doc.Find(`[data-testid="asset-active-backfills"]`).Length() != 0 {
		t.Errorf("asset active fragment without backfills: %d", status)
	}
	if status, _ := pgGet(t, env, c, "/assets/nope/active-backfills"); status != http.StatusNotFound {
		t.Errorf("asset active fragment of an unknown asset: %d", status)
	}
	_, doc = pgGet(t, env, c, next)
	live := doc.Find(`[data-testid="backfills-live"] [hx-get]`).AttrOr("hx-get", "")
	if !strings.Contains(live, "asset=t.daily") || !strings.Contains(live, "before=") || !strings.Contains(live, "fragment=rows") {
		t.Fatalf("the list's live table fetches %q", live)
	}
	if status, frag := pgGet(t, env, c, live); status != http.StatusOK || frag.Find(`[data-testid="nav-main"]`).Length() != 0 || frag.Find(`[data-testid="backfill-row"]`).Length() != 5 {
		t.Errorf("list fragment %s: %d, %d rows", live, status, frag.Find(`[data-testid="backfill-row"]`).Length())
	}
	tok := env.Token(t, auth.RoleViewer)
	for _, tc := range []struct {
		query string
		code  int
		n     int
	}{{"asset=t.flaky", 200, 1}, {"asset=t.daily&limit=500", 200, handlers.BackfillPageSize + 5}, {"asset=t.flaky&state=SUCCEEDED,FAILED,PENDING,RUNNING", 200, 1}, {"asset=nope", 400, 0}} {
		req, _ := http.NewRequest("GET", env.URL+"/api/v1/backfills?"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Backfills []map[string]any
			Error     struct{ Field string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || len(body.Backfills) != tc.n || (tc.code == 400 && body.Error.Field != "asset") {
			t.Errorf("GET /api/v1/backfills?%s: %d, %d backfills, error %+v", tc.query, resp.StatusCode, len(body.Backfills), body.Error)
		}
	}
	_, doc = pgGet(t, env, env.Client(t, auth.RoleOperator), "/backfills")
	if doc.Find(`[data-testid="new-backfill"]`).Length() != 1 {
		t.Error("an operator is not offered New backfill")
	}
}

func TestOverviewAndAssetSelection(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	c := env.Client(t, auth.RoleViewer)
	// No active backfill: no section, but the live container waits for one.
	_, doc := pgGet(t, env, c, "/")
	if doc.Find(`[data-testid="active-backfills"]`).Length() != 0 || doc.Find(`[data-testid="active-backfills-live"] [hx-get="/backfills/active"]`).Length() != 1 {
		t.Fatal("the overview without an active backfill: a section, or no live container")
	}
	if status, doc := pgGet(t, env, c, "/backfills/active"); status != http.StatusOK || doc.Find(`[data-testid="active-backfills"]`).Length() != 0 {
		t.Errorf("active partial with none active: %d", status)
	}
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	_, doc = pgGet(t, env, c, "/")
	row := doc.Find(`[data-testid="active-backfills"] [data-testid="backfill-row"][data-id="` + b.ID + `"]`)
	if row.Length() != 1 || row.Find(`[data-testid="progress-bar"]`).Length() != 1 {
		t.Fatal("the overview does not show the active backfill with a progress bar")
	}
	status, doc := pgGet(t, env, c, "/backfills/active")
	if status != http.StatusOK || doc.Find(`[data-testid="active-backfills"] [data-testid="backfill-row"]`).Length() != 1 {
		t.Errorf("active partial: %d", status)
	}
	_, doc = pgGet(t, env, env.Client(t, auth.RoleOperator), "/assets/t.daily") // viewers cannot launch: no bar
	bar := doc.Find(`form[data-testid="selection-bar"]`)
	if bar.Length() != 1 || bar.AttrOr("action", "") != "/backfills/new" || bar.Find(`input[name="asset"]`).AttrOr("value", "") != "t.daily" {
		t.Fatal("the asset page has no selection bar opening the new-backfill page")
	}
	_, doc = pgGet(t, env, c, "/backfills/selection?asset=t.daily&start=2025-01-03&end=2025-01-09")
	if got := doc.Find(`[data-testid="selection-n"]`).AttrOr("data-n", ""); got != "7" {
		t.Errorf("selection count %q, want 7", got)
	}
	_, doc = pgGet(t, env, c, "/backfills/selection?asset=t.daily&start=2025-01-09&end=2025-01-03")
	if doc.Find(`[data-testid="selection-error"]`).Length() != 1 {
		t.Error("a reversed selection has no message")
	}
	if status, _ := pgGet(t, env, c, "/backfills/selection?asset=nope"); status != http.StatusNotFound {
		t.Errorf("unknown asset: %d", status)
	}
}

// TestBackfillsLiveListKeepsPager: the list's live table brings its pager
// along. With a full first page, a backfill launched elsewhere pushes the
// oldest row off it; the refreshed table must link to the page that now
// holds that row (the pager outside the live table kept the old "Older"
// link, or none, and the pushed row was on no page until a reload).
func TestBackfillsLiveListKeepsPager(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	var ids []string
	for i := range handlers.BackfillPageSize {
		d := fmt.Sprintf("2025-02-%02d", i%28+1)
		ids = append(ids, pgCreateBF(t, eng, "t.daily", d, d, 1).ID)
	}
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/backfills")
	if doc.Find(`[data-testid="next-page"]`).Length() != 0 {
		t.Fatal("a full single page links to an older one")
	}
	live := doc.Find(`[data-testid="backfills-live"] [hx-get]`).AttrOr("hx-get", "")
	if live == "" {
		t.Fatal("the list has no live table")
	}
	pgCreateBF(t, eng, "t.daily", "2025-03-01", "2025-03-01", 1) // launched elsewhere
	status, frag := pgGet(t, env, c, live)
	if status != http.StatusOK || frag.Find(`[data-testid="nav-main"]`).Length() != 0 {
		t.Fatalf("live table %s: %d (or a whole page)", live, status)
	}
	if n := frag.Find(`[data-testid="backfill-row"]`).Length(); n != handlers.BackfillPageSize {
		t.Fatalf("%d rows in the refreshed first page", n)
	}
	next, ok := frag.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatalf("the refreshed table offers no way to the backfill it pushed off the page (%s)", ids[0])
	}
	_, doc = pgGet(t, env, c, next)
	if r := doc.Find(`[data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != ids[0] {
		t.Errorf("the older page %s shows %d rows, want the pushed-off %s", next, r.Length(), ids[0])
	}
}
