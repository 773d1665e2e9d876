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

// TestQueuedChunksSayWhyTheyWait: a chunk that waits for partitions another
// backfill is building names that run (chunk table, run page, API); a retry
// waiting out its backoff says when it starts; a paused backfill's retry
// says it waits for Resume.
func TestQueuedChunksSayWhyTheyWait(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("w.slow", testkit.Daily, "retries: {max_attempts: 1}", testkit.Shell(`sleep 20`)),
		testkit.Asset("w.flaky", testkit.Daily, "retries: {max_attempts: 3, backoff: 1h}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
	), true)
	ctx := t.Context()
	c := env.Client(t, auth.RoleViewer)
	a := pgCreateBF(t, eng, "w.slow", "2025-01-01", "2025-01-04", 4)
	holder := firstRun(t, env, a.ID, db.RunRunning, "the first backfill's chunk to run")
	cancelAtEnd(t, eng, a.ID)
	b := pgCreateBF(t, eng, "w.slow", "2025-01-02", "2025-01-03", 2)
	waiting := firstRun(t, env, b.ID, "", "the overlapping chunk to be planned")
	cancelAtEnd(t, eng, b.ID)
	if waiting.State != db.RunQueued {
		t.Fatalf("the overlapping chunk is %s, want queued", waiting.State)
	}
	_, doc := pgGet(t, env, c, "/backfills/"+b.ID)
	row := doc.Find(`[data-testid="chunk-row"][data-state="queued"]`)
	why := row.Find(`[data-testid="chunk-wait"]`).Text()
	if !strings.Contains(why, holder.ID) || !strings.Contains(why, a.ID) || !strings.Contains(why, "2025-01-02") {
		t.Errorf("the queued chunk does not say it waits for %s of %s building 2025-01-02: %q", holder.ID, a.ID, why)
	}
	if href := row.Find(`[data-testid="chunk-wait-run"]`).AttrOr("href", ""); href != "/runs/"+holder.ID {
		t.Errorf("link to the run it waits for: %q", href)
	}
	_, doc = pgGet(t, env, c, "/runs/"+waiting.ID)
	if why := doc.Find(`[data-testid="run-wait"]`).Text(); !strings.Contains(why, holder.ID) {
		t.Errorf("run page: %q", why)
	}
	var rj struct {
		Waiting *jobs.RunWait `json:"waiting"`
	}
	okJSON(t, env, c, "/api/v1/runs/"+waiting.ID, &rj)
	if rj.Waiting == nil || rj.Waiting.HolderRunID != holder.ID {
		t.Errorf("api waiting: %+v", rj.Waiting)
	}

	// A retry waiting out its backoff, then held by a pause.
	f := pgCreateBF(t, eng, "w.flaky", "2025-01-01", "2025-01-01", 1)
	testkit.Eventually(t, 15*time.Second, "the failed chunk to wait for its retry", func() bool {
		runs, _ := env.Store.Runs(ctx, f.ID, nil, -1, 1)
		return len(runs) == 1 && runs[0].State == db.RunQueued && runs[0].Attempts == 1
	})
	_, doc = pgGet(t, env, c, "/backfills/"+f.ID)
	if why := doc.Find(`[data-testid="chunk-wait"]`).Text(); !strings.Contains(why, "retry backoff: attempt 2 of 3 starts at") {
		t.Errorf("backoff: %q", why)
	}
	if _, err := eng.Transition(ctx, f.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	_, doc = pgGet(t, env, c, "/backfills/"+f.ID)
	if why := doc.Find(`[data-testid="chunk-wait"]`).Text(); !strings.Contains(why, "paused") || !strings.Contains(why, "resumed") {
		t.Errorf("paused: %q", why)
	}
}

type interruptFirst struct{}

func (interruptFirst) Execute(ctx context.Context, w jobs.Work) jobs.Result {
	if w.Attempt == 1 {
		return jobs.Result{State: db.AttemptInterrupted, Err: errors.New("interrupted: lease expired")}
	}
	return jobs.Result{Err: errors.New("boom")}
}

// TestChunkTableExplainsInterruptedAttempts: an interrupted attempt does not
// count against max_attempts, so a run may show more attempts than its
// maximum ("3/2"); the chunk table says how many were interrupted.
func TestChunkTableExplainsInterruptedAttempts(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("i.daily", testkit.Daily, "retries: {max_attempts: 2, backoff: 1ms}"),
	)
	eng := env.StartEngine(t, jobs.Options{Executor: interruptFirst{}})
	b := pgCreateBF(t, eng, "i.daily", "2025-01-01", "2025-01-01", 1)
	pgWaitState(t, env, b.ID, db.BackfillFailed)
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	cell := doc.Find(`[data-testid="chunk-row"]`).Children().Eq(4).Text()
	if !strings.Contains(cell, "3/2") || !strings.Contains(cell, "1 interrupted, not counted") {
		t.Errorf("attempts cell %q, want 3/2 with 1 interrupted, not counted", strings.Join(strings.Fields(cell), " "))
	}
}
