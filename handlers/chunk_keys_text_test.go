package handlers_test

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// A chunk of keys picked apart (an explicit list) does not read as the range
// between its first and last key; a chunk of a range does.
func TestChunkKeysSayWhenNotContiguous(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("k.daily", `{daily: {start: "2025-01-01", end: "2025-02-01"}}`),
	)
	eng := env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	explicit := testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{"k.daily"}, ChunkSize: 3, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "explicit", Keys: []string{"2025-01-01", "2025-01-05", "2025-01-09", "2025-01-10", "2025-01-11"}}})
	ranged := pgCreateBF(t, eng, "k.daily", "2025-01-01", "2025-01-03", 3)
	pgWaitState(t, env, explicit.ID, db.BackfillSucceeded)
	pgWaitState(t, env, ranged.ID, db.BackfillSucceeded)
	viewer := env.Client(t, auth.RoleViewer)
	for id, want := range map[string][]string{
		explicit.ID: {"2025-01-01, …, 2025-01-09 (not contiguous) (3)", "2025-01-10 … 2025-01-11 (2)"},
		ranged.ID:   {"2025-01-01 … 2025-01-03 (3)"},
	} {
		_, doc := pgGet(t, env, viewer, "/backfills/"+id)
		var rows []string
		doc.Find(`[data-testid="chunk-row"]`).Each(func(_ int, s *goquery.Selection) {
			rows = append(rows, strings.Join(strings.Fields(s.Children().Eq(2).Text()), " "))
		})
		if strings.Join(rows, "|") != strings.Join(want, "|") {
			t.Errorf("%s chunks %q, want %q", id, rows, want)
		}
	}
	runs, err := env.Store.Runs(t.Context(), explicit.ID, nil, -1, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	_, doc := pgGet(t, env, viewer, "/runs/"+runs[0].ID)
	if got := strings.Join(strings.Fields(doc.Find(`[data-testid="run-partitions"]`).Text()), " "); !strings.HasPrefix(got, "3: 2025-01-01, …, 2025-01-09 (not contiguous)") {
		t.Errorf("run page partitions %q", got)
	}
}
