package handlers_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

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
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `
assets:
  i.daily:
    partitions: {daily: {start: "2025-01-01"}}
    retries: {max_attempts: 2, backoff: 1ms}
    executor: {demo: {duration: 1ms}}
`})
	h := env.Handler
	wsf := func() (*catalog.Workspace, map[string]int64) { w := h.Workspace(); return w.Workspace, w.IDs }
	eng, err := jobs.NewEngine(context.Background(), env.Store, wsf, slog.New(slog.NewTextHandler(io.Discard, nil)),
		jobs.Options{Tick: 20 * time.Millisecond, Executor: interruptFirst{}})
	if err != nil {
		t.Fatal(err)
	}
	h.Engine = eng
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	b := pgCreateBF(t, eng, "i.daily", "2025-01-01", "2025-01-01", 1)
	pgWaitState(t, env, b.ID, db.BackfillFailed)
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	cell := doc.Find(`[data-testid="chunk-row"]`).Children().Eq(4).Text()
	if !strings.Contains(cell, "3/2") || !strings.Contains(cell, "1 interrupted, not counted") {
		t.Errorf("attempts cell %q, want 3/2 with 1 interrupted, not counted", strings.Join(strings.Fields(cell), " "))
	}
}
