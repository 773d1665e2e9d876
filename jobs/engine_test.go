package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

type testEnv struct {
	t      *testing.T
	store  *db.Store
	eng    *Engine
	ws     *catalog.Workspace
	ids    map[string]int64
	cancel context.CancelFunc
	done   chan struct{}
	setWS  func(*catalog.Workspace) // a second instance's workspace (instances_test.go)
}

func newTestEnv(t *testing.T, yaml string, opts Options) *testEnv {
	t.Helper()
	return newTestEnvOn(t, db.SQLite, yaml, opts)
}

// oneAttemptAsset is an asset of a test workspace (teststore.Asset) whose
// chunks get one attempt (a failure fails the run) and run executor.
func oneAttemptAsset(name, partitions, executor string) string {
	return teststore.Asset(name, partitions, "retries: {max_attempts: 1}", "executor: "+executor)
}

// newTestEnvOn is newTestEnv on a store of dialect d.
// eachTestEnv runs f on each dialect (teststore.EachDialect) with the
// engine of a store holding yaml (newTestEnvOn).
func eachTestEnv(t *testing.T, yaml string, opts Options, f func(t *testing.T, env *testEnv)) {
	t.Helper()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) { f(t, newTestEnvOn(t, d, yaml, opts)) })
}

func newTestEnvOn(t *testing.T, d db.Dialect, yaml string, opts Options) *testEnv {
	t.Helper()
	store, ws, ids := teststore.WithWorkspaceOn(t, d, yaml, time.Now())
	return newTestEnvWith(t, store, ws, ids, opts)
}

// newTestEnvAt is newTestEnvOn with the store at loc (teststore.OpenAt).
func newTestEnvAt(t *testing.T, loc, yaml string, opts Options) *testEnv {
	t.Helper()
	store, ws, ids := teststore.WithWorkspaceAt(t, loc, yaml, time.Now())
	return newTestEnvWith(t, store, ws, ids, opts)
}

// newTestEnvWith is the engine (not started; ticking every 20 ms unless
// opts says otherwise) of store, holding ws with its assets' ids.
func newTestEnvWith(t *testing.T, store *db.Store, ws *catalog.Workspace, ids map[string]int64, opts Options) *testEnv {
	t.Helper()
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	eng, err := NewEngine(context.Background(), store, func() (*catalog.Workspace, map[string]int64) { return ws, ids }, slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, store: store, eng: eng, ws: ws, ids: ids}
}

func (e *testEnv) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() { defer close(e.done); _ = e.eng.Run(ctx, time.Second) }()
	e.t.Cleanup(e.stop)
}

func (e *testEnv) stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
		e.cancel = nil
	}
}

func (e *testEnv) create(req Request) db.Backfill {
	e.t.Helper()
	c, err := e.eng.Create(context.Background(), req, "", "test")
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return c.Backfill
}

func (e *testEnv) wait(id string, states ...string) db.Backfill {
	e.t.Helper()
	var b db.Backfill
	done := false
	defer func() {
		if !done { // poll.Eventually failed: say where the backfill stopped
			e.t.Logf("backfill %s last seen %s: %+v", id, b.State, b)
		}
	}()
	poll.Eventually(e.t, 30*time.Second, fmt.Sprintf("backfill %s to be %v", id, states), func() bool {
		var err error
		if b, err = e.store.Backfill(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return slices.Contains(states, b.State)
	})
	done = true
	return b
}

// steps waits until the controller has finished n more steps, at least n-1
// of them begun after the call: what a step would do, it has done. Tests
// that check that something does NOT happen wait with it, not a sleep.
func (e *testEnv) steps(n int64) {
	e.t.Helper()
	from := e.eng.steps.Load()
	poll.Eventually(e.t, 20*time.Second, fmt.Sprintf("%d controller steps", n), func() bool { return e.eng.steps.Load() >= from+n })
}

var dailyWS = teststore.Assets(
	teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms-2ms}}"),
)

func TestBackfillRunsToSuccess(t *testing.T) {
	t.Parallel()
	eachTestEnv(t, dailyWS, Options{Executor: NoopExecutor{}}, func(t *testing.T, env *testEnv) {
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-02-01", End: "2025-02-28"}, ChunkSize: 7, MaxConcurrentRuns: 2})
		if b.TotalPartitions != 28 || b.TotalChunks != 4 || b.State != db.BackfillPending {
			t.Fatalf("created %+v", b)
		}
		b = env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
		if b.State != db.BackfillSucceeded || b.PartitionsMaterialized != 28 || b.RunsSucceeded != 4 {
			t.Fatalf("finished %+v", b)
		}
		var n int
		if err := env.store.RawReader().Get(&n, `SELECT COUNT(*) FROM partition_status_all WHERE status='materialized'`); err != nil || n != 28 {
			t.Fatalf("materialized rows %d %v", n, err)
		}
	})
}

// swapExec delegates to an executor that a test may replace while the engine runs.
type swapExec struct{ cur atomic.Value }

func newSwap(ex Executor) *swapExec {
	s := &swapExec{}
	s.cur.Store(&ex)
	return s
}

func (s *swapExec) set(ex Executor) { s.cur.Store(&ex) }

func (s *swapExec) Execute(ctx context.Context, w Work) Result {
	return (*s.cur.Load().(*Executor)).Execute(ctx, w)
}
