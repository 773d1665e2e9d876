package jobs

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// Several instances on one PostgreSQL database (issue 23): each test runs
// a second engine, on a store of its own, on the first one's database.

// secondInstance is another instance on e's database: its own store and
// engine, with the workspace of yaml (e's when empty). Its controller does
// not run unless the test starts it.
func (e *testEnv) secondInstance(yaml string, opts Options) *testEnv {
	e.t.Helper()
	store := teststore.OpenAt(e.t, e.store.Location().URL)
	ws := e.ws
	var err error
	if yaml != "" {
		if ws, err = catalog.ParseWorkspace("t2.yaml", []byte(yaml)); err != nil {
			e.t.Fatal(err)
		}
	}
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	other := &testEnv{t: e.t, store: store, ws: ws, ids: e.ids}
	cur := &atomic.Pointer[catalog.Workspace]{}
	cur.Store(ws)
	other.setWS = func(w *catalog.Workspace) { cur.Store(w); other.ws = w }
	other.eng, err = NewEngine(context.Background(), store, func() (*catalog.Workspace, map[string]int64) { return cur.Load(), e.ids }, slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return other
}

// linkPair runs a's and b's links and returns once a publication on A
// reaches B, with B's count of the probe topic's publications.
func linkPair(t *testing.T, a, b *testEnv) *atomic.Int64 {
	t.Helper()
	a.links()
	b.links()
	probe := counter(t, b.eng.Broker(), "bf_probe")
	poll.Eventually(t, 10*time.Second, "A's publication to reach B", func() bool {
		a.eng.Broker().Publish("bf_probe")
		return probe.Load() > 0
	})
	return probe
}

// probeAgain waits until a new publication on A reaches B's probe (see
// linkPair): B listens again after it lost its connection.
func probeAgain(t *testing.T, a *testEnv, probe *atomic.Int64, what string) {
	t.Helper()
	before := probe.Load()
	poll.Eventually(t, 15*time.Second, what, func() bool {
		a.eng.Broker().Publish("bf_probe")
		return probe.Load() > before
	})
}

// liveInstance is the engine of a fresh PostgreSQL store holding yaml, not
// started, that has heartbeated once: a live instance the others compare
// their workspace with.
func liveInstance(t *testing.T, yaml string) *testEnv {
	t.Helper()
	e := newTestEnvOn(t, db.Postgres, yaml, Options{})
	e.beat()
	return e
}

// beat records the instance's heartbeat now; the test fails on its error.
func (e *testEnv) beat() {
	e.t.Helper()
	if err := e.eng.heartbeat(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// links runs the engine's links with the other instances until the test
// ends.
func (e *testEnv) links() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.eng.RunInstanceLinks(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// counter counts the signals of a broker subscription until the test ends.
func counter(t *testing.T, b *Broker, topic string) *atomic.Int64 {
	ch, cancel, err := b.Subscribe(topic)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				n.Add(1)
			}
		}
	}()
	t.Cleanup(func() { close(done); cancel() })
	return &n
}

var sleepyWS = teststore.Assets(oneAttemptAsset("s.daily", "{daily: {start: 2025-01-01, end: 2025-12-31}}", "{command: [sh, -c, 'sleep 0.05']}"))

// TestLiveChangesCrossInstances: a page served by instance B follows a
// backfill whose runs instance A executes: B's broker is signalled for the
// backfill while A runs it, through PostgreSQL's notifications.
func TestLiveChangesCrossInstances(t *testing.T) {
	t.Parallel()
	a := newTestEnvOn(t, db.Postgres, sleepyWS, Options{})
	b := a.secondInstance("", Options{})
	linkPair(t, a, b)
	a.start()
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	onB := counter(t, b.eng.Broker(), bf.ID)
	a.wait(bf.ID, db.BackfillSucceeded)
	poll.Eventually(t, 10*time.Second, "B to be signalled as A's runs progress", func() bool { return onB.Load() >= 3 })
	// Every attempt ran on A: B only followed.
	var owners []string
	if err := b.store.RawReader().Select(&owners, `SELECT DISTINCT a.owner FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`, bf.ID); err != nil {
		t.Fatal(err)
	}
	if len(owners) != 1 || owners[0] != a.eng.Owner() {
		t.Fatalf("attempt owners %v, want only A's %s", owners, a.eng.Owner())
	}
}

// TestLiveRelayDoesNotEcho: an instance's own notification, coming back
// through the channel, is not published again; another's is; many
// publications make one notification.
func TestLiveRelayDoesNotEcho(t *testing.T) {
	t.Parallel()
	br := NewBroker()
	r := newRelay(nil, br, "w_me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ch, cancel, err := br.Subscribe("bf_x")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	r.republish("w_me bf_x") // publishLocal is synchronous
	select {
	case <-ch:
		t.Fatal("the instance's own notification was published again")
	default:
	}
	r.republish("w_other bf_x")
	select {
	case <-ch:
	default:
		t.Fatal("another instance's notification was not published")
	}
	for range 1000 {
		r.queue([]string{"bf_1", "bf_2"})
	}
	got := r.take()
	if len(got) != 1 || len(strings.Fields(got[0])) != 3 || !strings.HasPrefix(got[0], "w_me ") {
		t.Fatalf("payloads %q, want one: w_me and the two topics", got)
	}
	if again := r.take(); len(again) != 0 {
		t.Fatalf("queue not emptied: %q", again)
	}
}

// TestLiveChangesPollAndReconnect: while the listening connection is down
// an instance polls the events for the backfills that changed; after its
// connection is killed, it listens again.
func TestLiveChangesPollAndReconnect(t *testing.T) {
	t.Parallel()
	a := newTestEnvOn(t, db.Postgres, sleepyWS, Options{})
	b := a.secondInstance("", Options{})
	ctx := context.Background()
	r := newRelay(b.store, b.eng.Broker(), b.eng.Owner(), b.eng.Log)
	last, err := b.store.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	n := counter(t, b.eng.Broker(), bf.ID)
	next := r.poll(ctx, last)
	if next <= last {
		t.Fatalf("poll read no event after %d", last)
	}
	poll.Eventually(t, 20*time.Second, "the polled backfill to be published", func() bool { return n.Load() >= 1 })

	// The listening connection dies; the relay reconnects and listens again.
	probe := linkPair(t, a, b)
	var killed int
	if err := b.store.RawReader().Get(&killed, `SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN `+db.LiveChannel+`') k`); err != nil || killed == 0 {
		t.Fatalf("terminate the listening connections: %d %v", killed, err)
	}
	probeAgain(t, a, probe, "B to listen again after its connection was killed")
}

// TestPauseStopsPlanningAcrossInstances: pausing through instance B stops
// the planning of instance A, which runs the backfill, within a second:
// A's controller reads the backfill's state in every step.
func TestPauseStopsPlanningAcrossInstances(t *testing.T) {
	t.Parallel()
	a := newTestEnvOn(t, db.Postgres, sleepyWS, Options{})
	b := a.secondInstance("", Options{})
	a.start()
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-12-30"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	count := func(q string, args ...any) int64 {
		var n int64
		if err := b.store.RawReader().Get(&n, q, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	attempts := `SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`
	poll.Eventually(t, 20*time.Second, "A to start attempts", func() bool { return count(attempts, bf.ID) >= 5 })
	paused := time.Now()
	if _, err := b.eng.Transition(context.Background(), bf.ID, ActPause, 0, false, "t"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "A's running attempts to end", func() bool {
		return count(attempts+` AND a.state = 'running'`, bf.ID) == 0
	})
	a.steps(20)
	late := count(attempts+` AND a.started_at > ?`, bf.ID, db.Millis(paused.Add(time.Second)))
	if late != 0 {
		t.Fatalf("%d attempts started on A more than 1 s after the pause on B", late)
	}
	if got, _ := a.store.Backfill(context.Background(), bf.ID); got.State != db.BackfillPaused {
		t.Fatalf("backfill %s, want paused", got.State)
	}
}

// TestLiveLogKeptForOtherInstances: the output so far of a command attempt
// running on A is in the store for B's run page, and gone once the
// attempt's log is stored.
func TestLiveLogKeptForOtherInstances(t *testing.T) {
	t.Parallel()
	a := newTestEnvOn(t, db.Postgres, teststore.Assets(
		oneAttemptAsset("l.daily", "{daily: {start: 2025-01-01, end: 2025-12-31}}", "{command: [sh, -c, 'echo hello-from-a; sleep 2; echo bye-from-a']}"),
	), Options{})
	b := a.secondInstance("", Options{})
	a.links()
	a.start()
	bf := a.create(Request{Assets: []string{"l.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	ctx := context.Background()
	var runID string
	poll.Eventually(t, 10*time.Second, "the run's output so far to be in the store", func() bool {
		runs, err := b.store.Runs(ctx, bf.ID, nil, -1, 10)
		if err != nil || len(runs) == 0 {
			return false
		}
		runID = runs[0].ID
		l, ok, err := b.store.LiveLog(ctx, runID)
		return err == nil && ok && strings.Contains(l, "hello-from-a") && !strings.Contains(l, "bye-from-a")
	})
	a.wait(bf.ID, db.BackfillSucceeded)
	poll.Eventually(t, 10*time.Second, "the live log to be removed once the log is stored", func() bool {
		_, ok, err := b.store.LiveLog(ctx, runID)
		return err == nil && !ok
	})
	if l, err := b.store.AttemptLog(ctx, runID, 1); err != nil || !strings.Contains(l, "bye-from-a") {
		t.Fatalf("stored log %q %v", l, err)
	}
}

// TestWorkspaceMismatchStopsPlanning: an instance started with a workspace
// that differs from a live instance's names the assets that differ and does
// not plan; once it serves the same workspace, it plans.
func TestWorkspaceMismatchStopsPlanning(t *testing.T) {
	t.Parallel()
	a := liveInstance(t, sleepyWS)
	ctx := context.Background()
	if mm := a.eng.WorkspaceMismatch(); mm != nil {
		t.Fatalf("first instance: %v", mm)
	}
	b := a.secondInstance(strings.Replace(sleepyWS, "sleep 0.05", "sleep 0.06", 1)+`
  x.extra:
    partitions: {static: [a]}
    executor: {command: [sh, -c, 'true']}
`, Options{})
	mm := b.eng.WorkspaceMismatch()
	if mm == nil || mm.Instance != a.eng.Owner() || strings.Join(mm.Assets, ",") != "s.daily,x.extra" {
		t.Fatalf("mismatch %+v, want A's instance and assets s.daily, x.extra", mm)
	}
	if !strings.Contains(mm.Error(), "s.daily, x.extra") || !strings.Contains(mm.Error(), "does not plan") {
		t.Fatalf("message %q", mm.Error())
	}
	b.start()
	// B refuses to create a backfill; one created through A (whose
	// controller does not run) is not planned by B.
	if _, err := b.eng.Create(ctx, Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "all"}}, "", "test"); err == nil {
		t.Fatal("the instance whose workspace differs created a backfill")
	}
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-03"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	b.steps(10)
	if got, _ := b.store.Backfill(ctx, bf.ID); got.State != db.BackfillPending {
		t.Fatalf("backfill %s on the instance whose workspace differs, want pending", got.State)
	}
	// B is given A's workspace (a reload): it plans.
	b.setWS(a.ws)
	a.beat()
	if err := b.eng.checkWorkspace(ctx); err != nil {
		t.Fatal(err)
	}
	if mm := b.eng.WorkspaceMismatch(); mm != nil {
		t.Fatalf("same workspace, still %v", mm)
	}
	b.wait(bf.ID, db.BackfillSucceeded)
}

// TestInstanceLinksOnlyOnPostgres: on SQLite (one instance) the links
// with other instances return at once (no relay, no poll, no live log
// writes), nothing is recorded of the workspace and nothing differs.
func TestInstanceLinksOnlyOnPostgres(t *testing.T) {
	t.Parallel()
	a := newTestEnvOn(t, db.SQLite, sleepyWS, Options{})
	returned := make(chan struct{})
	go func() { a.eng.RunInstanceLinks(context.Background()); close(returned) }()
	poll.Eventually(t, 5*time.Second, "RunInstanceLinks to return at once on SQLite", func() bool {
		select {
		case <-returned:
			return true
		default:
			return false
		}
	})
	if a.eng.broker.relay != nil || a.eng.tails.on.Load() {
		t.Fatal("a relay or live-log writer on SQLite")
	}
	if a.eng.WorkspaceMismatch() != nil {
		t.Fatal("mismatch on SQLite")
	}
	var n int
	if err := a.store.RawReader().Get(&n, `SELECT COUNT(*) FROM worker_workspaces`); err != nil || n != 0 {
		t.Fatalf("worker_workspaces rows on SQLite: %d %v", n, err)
	}
}

// TestPostgresRestartMidBackfill: PostgreSQL restarts (pg_ctl restart)
// while instance A runs a backfill that instance B follows: A's engine
// reconnects and completes the backfill with every partition built, and
// B's live pages are signalled again after the restart. The cluster is
// the test's own (the package's is shared by its tests).
func TestPostgresRestartMidBackfill(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	// The runs after the fifth wait for the restart: the restart comes
	// while attempts run and before the backfill ends, however slowly a
	// loaded machine polls for the first five (the backfill of 40 runs of
	// 50 ms could end first).
	restarted := make(chan struct{})
	var begun atomic.Int64
	ex := funcExec(func(ctx context.Context, w Work) Result {
		if begun.Add(1) > 5 {
			select {
			case <-restarted:
			case <-ctx.Done():
				return Result{Err: ctx.Err()}
			}
		}
		return Result{}
	})
	a := newTestEnvAt(t, k.URL(t), sleepyWS, Options{Executor: ex})
	b := a.secondInstance("", Options{})
	probe := linkPair(t, a, b)
	a.start()
	const n = 40
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-02-09"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	onB := counter(t, b.eng.Broker(), bf.ID)
	count := func(q string, args ...any) int64 {
		var c int64
		if err := a.store.RawReader().Get(&c, q, args...); err != nil {
			return -1
		}
		return c
	}
	poll.Eventually(t, 20*time.Second, "some runs to succeed before the restart", func() bool {
		return count(`SELECT COUNT(*) FROM runs WHERE backfill_id=? AND state='succeeded'`, bf.ID) >= 5
	})
	if done := count(`SELECT COUNT(*) FROM runs WHERE backfill_id=? AND state='succeeded'`, bf.ID); done >= n {
		t.Fatalf("the backfill ended before the restart (%d runs): make it longer", done)
	}
	k.Restart(t)
	close(restarted)
	signalled := onB.Load()
	// (Reads do not fail for the restart: a connection ended by it is
	// replaced.)
	got := a.wait(bf.ID, db.BackfillSucceeded, db.BackfillFailed)
	if got.State != db.BackfillSucceeded {
		t.Fatalf("backfill %s after the restart: %+v", got.State, got)
	}
	if m := count(`SELECT COUNT(*) FROM partition_status_all WHERE asset_id=? AND status='materialized'`, a.ids["s.daily"]); m != n {
		t.Fatalf("%d partitions materialized, want %d", m, n)
	}
	if r := count(`SELECT COUNT(*) FROM runs WHERE backfill_id=?`, bf.ID); r != n {
		t.Fatalf("%d runs, want %d (none planned twice)", r, n)
	}
	poll.Eventually(t, 10*time.Second, "B to be signalled for the backfill after the restart", func() bool { return onB.Load() > signalled })
	// And B listens again (not only polls): a publication reaches it.
	probeAgain(t, a, probe, "B to listen again after the restart")
}
