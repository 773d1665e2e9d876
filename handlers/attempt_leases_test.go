package handlers_test

import (
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// TestLeaseWithoutRowShowsInProgress: partitions a running attempt builds
// that had no status row (their lease is the attempt's, no row is written
// until it ends) show in progress on the asset grid, the partition page,
// the partitions API and the backfill preview, as they did when the lease
// was a status row.
func TestLeaseWithoutRowShowsInProgress(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, `
assets:
  l.slow:
    partitions: {daily: {start: "2025-01-01", end: "2025-02-01"}}
    retries: {max_attempts: 1}
    executor:
      command: ['sleep 20']
      shell: true
`, true)
	b := pgCreateBF(t, eng, "l.slow", "2025-01-01", "2025-01-04", 4)
	cancelAtEnd(t, eng, b.ID)
	run := firstRun(t, env, b.ID, db.RunRunning, "the chunk to run")
	var rows int
	if err := env.Store.RawReader().Get(&rows, `SELECT COUNT(*) FROM partition_status`); err != nil || rows != 0 {
		t.Fatalf("%d status rows while the attempt runs (%v), want none: the lease is the attempt's", rows, err)
	}
	c := env.Client(t, auth.RoleViewer)

	// The grid: four tiles in progress, the rest missing.
	_, doc := pgGet(t, env, c, "/assets/l.slow?from=2025-01-01&to=2025-01-10")
	tiles := doc.Find(`[data-testid="grid"] a`)
	if tiles.Length() != 10 {
		t.Fatalf("%d tiles, want 10", tiles.Length())
	}
	for i := range 10 {
		class := tiles.Eq(i).AttrOr("class", "")
		if want := i < 4; strings.Contains(class, "s-r") != want || strings.Contains(class, "s-x") == want {
			t.Errorf("tile %d (%s): class %q, want in progress %v", i, tiles.Eq(i).AttrOr("title", ""), class, want)
		}
	}

	// The partition page: in progress, its instance in the history.
	_, doc = pgGet(t, env, c, "/assets/l.slow/partitions/2025-01-02")
	if got := doc.Find(`[data-testid="partition-status"]`).Text(); !strings.Contains(got, "progress") {
		t.Errorf("partition page status %q, want in progress", got)
	}
	inst := doc.Find(`[data-testid="instance"]`)
	if inst.Length() != 1 || !strings.Contains(inst.Text(), run.ID) {
		t.Errorf("partition page history %q, want the instance of %s in progress", inst.Text(), run.ID)
	}

	// The API: the partitions in progress, and not missing.
	get := func(path string, v any) { t.Helper(); okJSON(t, env, c, path, v) }
	var page struct {
		Partitions []struct {
			Partition string `json:"partition"`
			Status    string `json:"status"`
		} `json:"partitions"`
	}
	get("/api/v1/assets/l.slow/partitions?status=in_progress", &page)
	if len(page.Partitions) != 4 || page.Partitions[0].Partition != "2025-01-01" || page.Partitions[3].Partition != "2025-01-04" {
		t.Errorf("API in_progress partitions %+v, want 2025-01-01 to 2025-01-04", page.Partitions)
	}
	get("/api/v1/assets/l.slow/partitions?limit=6", &page)
	for i, p := range page.Partitions {
		if want := map[bool]string{true: "in_progress", false: "missing"}[i < 4]; p.Status != want {
			t.Errorf("API partition %s: %s, want %s", p.Partition, p.Status, want)
		}
	}
	get("/api/v1/assets/l.slow/partitions?status=missing&limit=2", &page)
	if len(page.Partitions) != 2 || page.Partitions[0].Partition != "2025-01-05" {
		t.Errorf("API missing partitions %+v, want from 2025-01-05", page.Partitions)
	}

	// The preview: in progress, skipped.
	pv, err := eng.Preview(t.Context(), jobs.Request{Assets: []string{"l.slow"}, Selector: jobs.Selector{Type: "range", Start: "2025-01-03", End: "2025-01-06"}, ChunkSize: 2, MaxConcurrentRuns: 1})
	if err != nil || pv.Status[db.StatusInProgress] != 2 || pv.Status[db.StatusMissing] != 2 || pv.SkippedCount != 2 {
		t.Fatalf("preview %+v %v, want 2 in progress (skipped) and 2 missing", pv, err)
	}
}
