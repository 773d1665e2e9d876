package handlers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// failDay fails one partition on every attempt and builds the rest of its
// chunk; every other chunk runs until canceled.
type failDay string

func (f failDay) Execute(ctx context.Context, w jobs.Work) jobs.Result {
	if !strings.Contains(strings.Join(w.Partitions, ","), string(f)) {
		<-ctx.Done()
		return jobs.Result{State: db.AttemptCanceled, Err: ctx.Err()}
	}
	res := jobs.Result{Parts: map[string]jobs.PartResult{}}
	for _, p := range w.Partitions {
		if p == string(f) {
			res.Parts[p] = jobs.PartResult{Partition: p, Status: db.StatusFailed, Error: "bad day"}
			res.Err = errors.New("bad day")
			continue
		}
		res.Parts[p] = jobs.PartResult{Partition: p, Status: db.StatusMaterialized}
	}
	return res
}

// TestBackfillCountsQueuedRetryOnce: a chunk of 3 whose first attempt built
// 2 partitions and waits to retry the third counts 2 succeeded and 1 queued,
// not 2 succeeded and 3 queued (which left pending 2 short).
func TestBackfillCountsQueuedRetryOnce(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `
assets:
  r.daily:
    partitions: {daily: {start: "2025-01-01"}}
    retries: {max_attempts: 3, backoff: 1h}
    executor: {demo: {duration: 1ms}}
`})
	eng := env.StartEngine(t, jobs.Options{Executor: failDay("2025-01-02")})
	b := pgCreateBF(t, eng, "r.daily", "2025-01-01", "2025-01-30", 3)
	// Chunk 0 waits an hour to retry; chunks 1 and 2 run (2 at a time).
	testkit.Eventually(t, 10*time.Second, "chunk 0 to wait for its retry while chunks 1 and 2 run", func() bool {
		runs, err := env.Store.Runs(context.Background(), b.ID, nil, -1, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 3 && runs[0].State == db.RunQueued && runs[0].Attempts == 1 && runs[1].State == db.RunRunning && runs[2].State == db.RunRunning
	})
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	count := func(k string) string {
		return strings.TrimSpace(doc.Find(`[data-testid="count-` + k + `"] b`).Text())
	}
	if count("succeeded") != "2" || count("queued") != "1" || count("running") != "6" || count("pending") != "21" {
		t.Errorf("counts succeeded %q running %q queued %q pending %q; want 2, 6, 1 and 21 of 30", count("succeeded"), count("running"), count("queued"), count("pending"))
	}
}
