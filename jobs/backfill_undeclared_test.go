package jobs

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/logbuf"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestUndeclaredBackfillDoesNotStopPlanning: a backfill whose asset the
// instance's workspace no longer declares (created by an instance serving
// another workspace) is left as it is, with a wait reason naming the asset,
// while the other backfills plan and finish.
func TestUndeclaredBackfillDoesNotStopPlanning(t *testing.T) {
	t.Parallel()
	both := teststore.Assets(
		teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms-2ms}}"),
		teststore.Asset("b.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms-2ms}}"),
	)
	env := newTestEnv(t, both, Options{Executor: NoopExecutor{}})
	cur := &atomic.Pointer[catalog.Workspace]{}
	cur.Store(env.ws)
	env.eng.ws = func() (*catalog.Workspace, map[string]int64) { return cur.Load(), env.ids }
	var logged logbuf.Buffer
	env.eng.Log = slog.New(slog.NewTextHandler(&logged, nil))
	sel := Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}
	gone := env.create(Request{Assets: []string{"b.daily"}, Selector: sel, ChunkSize: 1, MaxConcurrentRuns: 1})
	// The workspace no longer declares b.daily.
	only, err := catalog.ParseWorkspace("only.yaml", []byte(teststore.Assets(
		teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms-2ms}}"))))
	if err != nil {
		t.Fatal(err)
	}
	cur.Store(only)
	ok := env.create(Request{Assets: []string{"a.daily"}, Selector: sel, ChunkSize: 1, MaxConcurrentRuns: 1})
	env.start()
	env.wait(ok.ID, db.BackfillSucceeded)
	env.steps(5)
	b, err := env.store.Backfill(context.Background(), gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != db.BackfillRunning || b.NextChunk != 0 {
		t.Fatalf("undeclared backfill %s next chunk %d, want running and left as it was", b.State, b.NextChunk)
	}
	w, err := env.eng.NextChunkWait(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if w == nil || !strings.Contains(w.Reason, "b.daily is not declared in this instance's workspace") {
		t.Fatalf("wait reason %+v, want one naming b.daily as not declared", w)
	}
	// Logged once, not once a step.
	env.steps(5)
	if n := strings.Count(logged.String(), "backfill not planned"); n != 1 || !strings.Contains(logged.String(), "assets=b.daily") {
		t.Fatalf("logged %d times, want once naming b.daily:\n%s", n, logged.String())
	}
	// Canceling it still works.
	if _, err := env.eng.Transition(context.Background(), gone.ID, ActCancel, 0, false, "test"); err != nil {
		t.Fatal(err)
	}
	env.wait(gone.ID, db.BackfillCanceled)
}
