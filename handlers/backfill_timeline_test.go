package handlers_test

import (
	"net/http"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// TestBackfillEventsAndConflictsPages: the timeline walks page by page with
// next_cursor, newest first, with no duplicate and no gap; bad cursors are 400.
func TestBackfillEventsAndConflictsPages(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-06", 1)
	pgWaitState(t, env, b.ID, db.BackfillSucceeded, db.BackfillFailed) // the backfill ends
	type page struct {
		Events     []struct{ ID int64 }
		NextCursor string `json:"next_cursor"`
	}
	var all page
	resp, _ := env.Get("/api/v1/backfills/" + b.ID + "/events?limit=1000")
	decode(t, resp, &all)
	if len(all.Events) < 4 {
		t.Fatalf("only %d events", len(all.Events))
	}
	var walked []int64
	cursor := ""
	for i := 0; i < 100; i++ {
		var p page
		resp, _ := env.Get("/api/v1/backfills/" + b.ID + "/events?limit=3&cursor=" + cursor)
		decode(t, resp, &p)
		for _, e := range p.Events {
			walked = append(walked, e.ID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(walked) != len(all.Events) {
		t.Fatalf("walked %d events, the full list has %d", len(walked), len(all.Events))
	}
	for i := range walked {
		if walked[i] != all.Events[i].ID {
			t.Fatalf("event %d: walked %d, list %d", i, walked[i], all.Events[i].ID)
		}
	}
	for _, p := range []string{"/api/v1/backfills/" + b.ID + "/events?cursor=bogus", "/api/v1/conflicts?cursor=bogus", "/api/v1/conflicts?limit=0"} {
		resp, _ := env.Get(p)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	var cs struct {
		Conflicts  []any  `json:"conflicts"`
		NextCursor string `json:"next_cursor"`
	}
	resp, _ = env.Get("/api/v1/conflicts")
	decode(t, resp, &cs)
	if cs.Conflicts == nil || cs.NextCursor != "" {
		t.Fatalf("conflicts: %+v", cs)
	}
}
