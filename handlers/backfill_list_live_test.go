package handlers_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// TestBackfillsLiveListKeepsPager: the list's live table brings its pager
// along. With a full first page, a backfill launched elsewhere pushes the
// oldest row off it; the refreshed table must link to the page that now
// holds that row (the pager outside the live table kept the old "Older"
// link, or none, and the pushed row was on no page until a reload).
func TestBackfillsLiveListKeepsPager(t *testing.T) {
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
