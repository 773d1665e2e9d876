package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// Several instances on one PostgreSQL database (issue 23), as engines in
// one process: each has its own *db.Store on the same database, its own
// owner (worker row) and its own slots, which is what a `tessera serve`
// process is to the others.

// clusterEnv is n engines on one fresh PostgreSQL database.
type clusterEnv struct {
	t       *testing.T
	ws      *catalog.Workspace
	ids     map[string]int64
	stores  []*db.Store
	engs    []*Engine
	scheds  []*Scheduler
	stops   []func()
	cancels []context.CancelFunc
}

// newClusterEnv opens n stores on one fresh database holding the workspace
// yaml and an engine on each; opts(i) are engine i's options.
func newClusterEnv(t *testing.T, n int, yaml string, opts func(i int) Options) *clusterEnv {
	t.Helper()
	return newClusterEnvAt(t, pgtest.URL(t), n, yaml, opts)
}

// newClusterEnvAt is newClusterEnv on the database at url.
func newClusterEnvAt(t *testing.T, url string, n int, yaml string, opts func(i int) Options) *clusterEnv {
	t.Helper()
	first, ws, ids := teststore.WithWorkspaceAt(t, url, yaml, time.Now())
	c := &clusterEnv{t: t, ws: ws, ids: ids, stops: make([]func(), n), cancels: make([]context.CancelFunc, n)}
	ctx := context.Background()
	for i := range n {
		store := first
		if i > 0 {
			store = teststore.OpenAt(t, url)
		}
		o := opts(i)
		if o.Tick == 0 {
			o.Tick = 20 * time.Millisecond
		}
		eng, err := NewEngine(ctx, store, func() (*catalog.Workspace, map[string]int64) { return ws, c.ids }, slog.New(slog.NewTextHandler(io.Discard, nil)), o)
		if err != nil {
			t.Fatal(err)
		}
		c.stores, c.engs = append(c.stores, store), append(c.engs, eng)
		c.scheds = append(c.scheds, NewScheduler(eng, slog.New(slog.NewTextHandler(io.Discard, nil))))
	}
	t.Cleanup(func() {
		for i := range c.stops {
			c.stop(i)
		}
	})
	return c
}

// start runs engine i's controller, and its scheduler when withSched.
func (c *clusterEnv) start(i int, withSched bool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.engs[i].Run(ctx, time.Second) }()
	if withSched {
		wg.Add(1)
		go func() { defer wg.Done(); c.scheds[i].Run(ctx) }()
	}
	go func() { wg.Wait(); close(done) }()
	c.stops[i] = func() { cancel(); <-done }
	c.cancels[i] = cancel
}

// stop shuts engine i down cleanly.
func (c *clusterEnv) stop(i int) {
	if c.stops[i] != nil {
		c.stops[i]()
		c.stops[i] = nil
	}
}

// kill makes instance i die as kill -9 would to the others: its store is
// closed, so it neither heartbeats nor records anything again, and its
// attempts stay running in the database under its name until another
// instance finds their lease expired. Its goroutines are left to end on
// their own (its controller's shutdown records nothing either).
func (c *clusterEnv) kill(i int) {
	c.stores[i].Close()
	c.cancels[i]()
	c.stops[i] = nil
}

// cut cuts instance i off the database (its store closed) and leaves it
// running otherwise: it can neither heartbeat nor record, as behind a
// network partition. It is stopped, without waiting, when the test ends.
func (c *clusterEnv) cut(i int) {
	c.stores[i].Close()
	c.t.Cleanup(c.cancels[i])
	c.stops[i] = nil
}

// create creates a backfill through engine 0.
func (c *clusterEnv) create(req Request) db.Backfill {
	c.t.Helper()
	cr, err := c.engs[0].Create(context.Background(), req, "", "test")
	if err != nil {
		c.t.Fatalf("create: %v", err)
	}
	return cr.Backfill
}

// wait waits until backfill id is in one of states, read by instance i.
func (c *clusterEnv) wait(i int, id string, d time.Duration, states ...string) db.Backfill {
	c.t.Helper()
	var b db.Backfill
	poll.Eventually(c.t, d, fmt.Sprintf("backfill %s to be %v", id, states), func() bool {
		var err error
		if b, err = c.stores[i].Backfill(context.Background(), id); err != nil {
			c.t.Fatal(err)
		}
		for _, s := range states {
			if b.State == s {
				return true
			}
		}
		return false
	})
	return b
}

// buildLog is what the executors of every instance did: partitions being
// built (two attempts building one at once is an overlap), how often each
// was built, the peak of runs at once per asset, and the attempts' starts.
type buildLog struct {
	mu       sync.Mutex
	inflight map[string]int // asset/key → attempts building it now
	builds   map[string]int // asset/key → times built
	running  map[string]int // asset → runs now
	peak     map[string]int // asset → most runs at once
	starts   map[string][]time.Time
	byEngine map[int]int // instance → attempts run
	overlaps []string
	// meet: assets whose runs, once started, wait (up to 20 s) for the
	// asset's runs to have reached that many at once before they build:
	// a cap's peak is then reached however slow the instances' steps are.
	meet map[string]int
}

func newBuildLog() *buildLog {
	return &buildLog{inflight: map[string]int{}, builds: map[string]int{}, running: map[string]int{}, peak: map[string]int{},
		starts: map[string][]time.Time{}, byEngine: map[int]int{}}
}

// exec is instance i's executor: it builds each partition of an attempt
// for d, all at once.
func (l *buildLog) exec(i int, d time.Duration) Executor {
	return funcExec(func(ctx context.Context, w Work) Result {
		l.mu.Lock()
		l.byEngine[i]++
		l.running[w.Asset]++
		l.peak[w.Asset] = max(l.peak[w.Asset], l.running[w.Asset])
		l.starts[w.Asset] = append(l.starts[w.Asset], time.Now())
		for _, p := range w.Partitions {
			k := w.Asset + "/" + p
			l.inflight[k]++
			if l.inflight[k] > 1 {
				l.overlaps = append(l.overlaps, k)
			}
		}
		l.mu.Unlock()
		if n := l.meet[w.Asset]; n > 0 {
			met := func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.peak[w.Asset] >= n
			}
			for deadline := time.Now().Add(20 * time.Second); !met() && time.Now().Before(deadline) && ctx.Err() == nil; {
				time.Sleep(5 * time.Millisecond)
			}
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.running[w.Asset]--
		for _, p := range w.Partitions {
			k := w.Asset + "/" + p
			l.inflight[k]--
			if ctx.Err() == nil {
				l.builds[k]++
			}
		}
		if ctx.Err() != nil {
			return Result{Err: context.Cause(ctx)}
		}
		return Result{}
	})
}

// A pool of 2 never runs 3 at once over 3 instances of one slot each
// (whose slots would run 3), nor a backfill of max_concurrent_runs 2;
// a throttle of 4 a second holds across them; and all the work is done.
func TestClusterCapsHoldAcrossInstances(t *testing.T) {
	t.Parallel()
	ws := `pools:
  small: {max_concurrent_runs: 2}
  slow: {max_concurrent_runs: 10, throttle: 4/1s}
` + teststore.Assets(
		teststore.Asset("a.capped", "{daily: {start: 2025-01-01, end: 2025-01-25}}", "pool: small"),
		teststore.Asset("a.free", "{daily: {start: 2025-01-01, end: 2025-01-25}}"),
		teststore.Asset("a.throttled", "{daily: {start: 2025-01-01, end: 2025-01-09}}", "pool: slow"),
	)
	log := newBuildLog()
	// The peaks below must reach the caps, not only stay under them: a run
	// of a.capped or a.free waits for a second one to be running before
	// it builds (under make test's race pass, steps of three instances
	// once took longer than a run, so no two overlapped), and runs of
	// 150 ms give a third one the time to start if a cap let it.
	log.meet = map[string]int{"a.capped": 2, "a.free": 2}
	c := newClusterEnv(t, 3, ws, func(i int) Options { return Options{Executor: log.exec(i, 150*time.Millisecond), MaxConcurrentRuns: 1} })
	for i := range 3 {
		c.start(i, false)
	}
	a := c.create(Request{Assets: []string{"a.capped"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 8})
	c.wait(0, a.ID, 60*time.Second, db.BackfillSucceeded)
	f := c.create(Request{Assets: []string{"a.free"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	c.wait(0, f.ID, 60*time.Second, db.BackfillSucceeded)
	th := c.create(Request{Assets: []string{"a.throttled"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 8})
	c.wait(0, th.ID, 60*time.Second, db.BackfillSucceeded)
	log.mu.Lock()
	defer log.mu.Unlock()
	if p := log.peak["a.capped"]; p != 2 {
		t.Errorf("pool small (2 at once): %d runs of a.capped ran at once over 3 instances", p)
	}
	if p := log.peak["a.free"]; p != 2 {
		t.Errorf("backfill of max_concurrent_runs 2: %d runs of a.free ran at once over 3 instances", p)
	}
	for _, k := range []string{"a.capped", "a.free"} {
		for d := 1; d <= 24; d++ {
			if n := log.builds[fmt.Sprintf("%s/2025-01-%02d", k, d)]; n != 1 {
				t.Errorf("%s 2025-01-%02d built %d times", k, d, n)
			}
		}
	}
	// 8 runs, at most 4 started within any second: the 5th starts a
	// second after the 1st. The throttle counts the attempts' recorded
	// starts (a command of a loaded machine may begin a while after its
	// step recorded it, so its own clock could see two starts closer than
	// the throttle allowed them): those are checked, and that each
	// executor saw its 8 starts.
	if n := len(log.starts["a.throttled"]); n != 8 {
		t.Errorf("throttle 4/1s over 3 instances: the executors saw %d starts, want 8", n)
	}
	runs, err := c.stores[0].Runs(context.Background(), th.ID, nil, -1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var st []int64
	for _, r := range runs {
		as, err := c.stores[0].Attempts(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			st = append(st, a.StartedAt)
		}
	}
	slices.Sort(st)
	for i := 4; i < len(st); i++ {
		if st[i]-st[i-4] < 1000 {
			t.Errorf("throttle 4/1s over 3 instances: recorded starts %d and %d are %d ms apart (of %v)", i-4, i, st[i]-st[i-4], st)
		}
	}
	if len(st) != 8 {
		t.Errorf("throttle: %d attempts recorded, want 8", len(st))
	}
	if len(log.byEngine) < 2 {
		t.Errorf("the attempts ran on %d instance(s), want them shared: %v", len(log.byEngine), log.byEngine)
	}
}

// Three instances share a backfill of a few thousand partitions: every
// chunk is planned once (runs.planned events, runs), every run has one
// attempt, no partition is built by two attempts at once, each is built
// once, and the work is spread over the instances.
func TestClusterPlansEachChunkOnce(t *testing.T) {
	t.Parallel()
	// 3,000 partitions, 1,000 chunks; 600 partitions in the race pass
	// (-short), where the race detector makes each step ten times slower
	// and 200 chunks over three instances still interleave their steps.
	end, want := "2025-03-20", int64(3000)
	if testing.Short() {
		end, want = "2018-08-24", 600
	}
	ws := teststore.Assets(teststore.Asset("big", "{daily: {start: 2017-01-01, end: "+end+"}}"))
	log := newBuildLog()
	c := newClusterEnv(t, 3, ws, func(i int) Options { return Options{Executor: log.exec(i, time.Millisecond), MaxConcurrentRuns: 4} })
	for i := range 3 {
		c.start(i, false)
	}
	b := c.create(Request{Assets: []string{"big"}, Selector: Selector{Type: "range"}, ChunkSize: 3, MaxConcurrentRuns: 12})
	// 1,000 chunks over three instances whose steps take turns: 12 s
	// plain and idle, 98 s (before -short made it 200 chunks) in the race
	// pass on a loaded machine; the wait ends as soon as the backfill does.
	got := c.wait(1, b.ID, 4*time.Minute, db.BackfillSucceeded, db.BackfillFailed)
	if got.State != db.BackfillSucceeded || got.TotalPartitions < want {
		t.Fatalf("backfill %s with %d partitions, want succeeded and ≥ %d", got.State, got.TotalPartitions, want)
	}
	checkChunksPlannedOnce(t, c.stores[0], b.ID, got.TotalChunks)
	checkFinishedOnce(t, c.stores[0], b.ID)
	store := c.stores[0]
	if n := countRows(t, store, `SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`, b.ID); n != got.TotalChunks {
		t.Errorf("%d attempts for %d chunks: a chunk started twice", n, got.TotalChunks)
	}
	if n := countRows(t, store, `SELECT COUNT(DISTINCT a.owner) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`, b.ID); n < 2 {
		t.Errorf("the attempts were owned by %d instance(s), want them shared", n)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.overlaps) > 0 {
		t.Errorf("partitions built by two attempts at once: %v", log.overlaps[:min(10, len(log.overlaps))])
	}
	if int64(len(log.builds)) != got.TotalPartitions {
		t.Errorf("%d partitions built, want %d", len(log.builds), got.TotalPartitions)
	}
	for k, n := range log.builds {
		if n != 1 {
			t.Errorf("%s built %d times", k, n)
		}
	}
}

// backfillEvents decodes the payloads of backfill id's events of type typ,
// oldest first.
func backfillEvents[T any](t *testing.T, store *db.Store, typ, id string) []T {
	t.Helper()
	var payloads []string
	if err := store.RawReader().Select(&payloads, `SELECT payload FROM events WHERE type = ? AND subject = ? ORDER BY id`, typ, "backfill:"+id); err != nil {
		t.Fatal(err)
	}
	out := make([]T, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkChunksPlannedOnce checks that backfill id's runs.planned events
// plan each of its chunks once, and that it has one run per chunk.
func checkChunksPlannedOnce(t *testing.T, store *db.Store, id string, chunks int64) {
	t.Helper()
	planned := map[int64]int{}
	for _, ev := range backfillEvents[db.RunsPlanned](t, store, db.EvRunsPlanned, id) {
		for _, r := range ev.Runs {
			planned[r.Chunk]++
		}
	}
	for ch, n := range planned {
		if n != 1 {
			t.Errorf("chunk %d planned %d times", ch, n)
		}
	}
	if int64(len(planned)) != chunks {
		t.Errorf("%d chunks planned, want %d", len(planned), chunks)
	}
	if n := countRows(t, store, `SELECT COUNT(*) FROM runs WHERE backfill_id = ?`, id); n != chunks {
		t.Errorf("%d runs, want %d", n, chunks)
	}
}

// When an instance dies or is cut off from the database (it stops
// heartbeating), another takes its running attempts over once their lease
// expires: they are recorded interrupted, under the dead instance's name,
// and retried elsewhere, keeping the partitions their command had reported
// (checkpoint); the cut-off instance stops its own runs of them.
func TestClusterTakesOverADeadInstance(t *testing.T) {
	t.Parallel()
	ws := teststore.Assets(teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-01-13}}"))
	var mu sync.Mutex
	reported := map[string]bool{} // the first partition of each of the dead instance's attempts
	causes := make(chan error, 4)
	dying := funcExec(func(ctx context.Context, w Work) Result {
		line, _ := json.Marshal(PartResult{Partition: w.Partitions[0], Status: db.StatusMaterialized})
		os.MkdirAll(filepath.Dir(w.ReportPath), 0o755)
		if err := os.WriteFile(w.ReportPath, append(line, '\n'), 0o644); err != nil {
			return Result{Err: err}
		}
		mu.Lock()
		reported[w.Partitions[0]] = true
		mu.Unlock()
		<-ctx.Done() // it never ends: its instance is cut off first
		causes <- context.Cause(ctx)
		return Result{Err: context.Cause(ctx)}
	})
	log := newBuildLog()
	reports := t.TempDir()
	c := newClusterEnv(t, 3, ws, func(i int) Options {
		o := Options{Executor: log.exec(i, time.Millisecond), LeaseTTL: time.Second, ReportDir: reports}
		if i == 0 {
			o.Executor = dying
		}
		return o
	})
	c.start(0, false)
	b := c.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 3, MaxConcurrentRuns: 4})
	poll.Eventually(t, 10*time.Second, "the 4 chunks reported a partition each", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) == 4
	})
	c.cut(0)
	c.start(1, false)
	c.start(2, false)
	c.wait(1, b.ID, 30*time.Second, db.BackfillSucceeded)
	// Cut off, it stopped its own runs once its lease had expired.
	for range 4 {
		wantEndedWith(t, causes, errFenced, "the cut-off instance's attempt", "the cut-off instance still runs attempts its lease no longer covers")
	}
	store := c.stores[1]
	if n := countRows(t, store, `SELECT COUNT(*) FROM attempts WHERE state = 'interrupted' AND owner = ?`, c.engs[0].owner); n != 4 {
		t.Errorf("%d of the dead instance's attempts recorded interrupted, want 4", n)
	}
	if n := countRows(t, store, `SELECT COUNT(*) FROM attempts WHERE state = 'succeeded' AND owner IN (?, ?)`, c.engs[1].owner, c.engs[2].owner); n != 4 {
		t.Errorf("%d attempts succeeded on the live instances, want 4", n)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for k := range reported {
		if n := log.builds["a.daily/"+k]; n != 0 {
			t.Errorf("%s, checkpointed by the dead instance, was built again %d times", k, n)
		}
	}
	if len(log.builds) != 12-4 {
		t.Errorf("%d partitions built after the takeover, want 8: %v", len(log.builds), log.builds)
	}
	if len(log.overlaps) > 0 {
		t.Errorf("built by two attempts at once: %v", log.overlaps)
	}
	checkChunksPlannedOnce(t, store, b.ID, 4)
	checkFinishedOnce(t, store, b.ID)
}

// checkFinishedOnce checks that each attempt of backfill id is recorded
// finished by one attempts.finished event, and that every attempt ended.
func checkFinishedOnce(t *testing.T, store *db.Store, id string) {
	t.Helper()
	ends := map[attemptRef]int{}
	for _, ev := range backfillEvents[db.AttemptsFinished](t, store, db.EvAttemptsFinished, id) {
		for _, a := range ev.Attempts {
			ends[attemptRef{a.RunID, a.Attempt}]++
		}
	}
	for a, n := range ends {
		if n != 1 {
			t.Errorf("attempt %d of %s recorded finished %d times", a.attempt, a.run, n)
		}
	}
	if n := countRows(t, store, `SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`, id); n != int64(len(ends)) {
		t.Errorf("%d attempts, %d recorded finished", n, len(ends))
	}
	b, err := store.Backfill(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if b.RunsRunning != 0 {
		t.Errorf("backfill %s counts %d runs running at its end", id, b.RunsRunning)
	}
}

// Two instances that find the same expired attempt and step at once record
// it once: the steps are serialized and a step finishes only an attempt
// still running under the owner it expects.
func TestClusterRecoversAnAttemptOnce(t *testing.T) {
	t.Parallel()
	ws := teststore.Assets(teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-01-04}}"))
	g := newGate()
	c := newClusterEnv(t, 3, ws, func(i int) Options { return Options{Executor: g, LeaseTTL: time.Second} })
	c.start(0, false)
	b := c.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 3, MaxConcurrentRuns: 1})
	poll.Eventually(t, 10*time.Second, "the attempt to start", func() bool { return g.started.Load() == 1 })
	c.kill(0)
	ctx := context.Background()
	comps := make([][]completion, 3)
	for _, i := range []int{1, 2} {
		if err := c.engs[i].heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 10*time.Second, "the lease to expire", func() bool {
			var err error
			if comps[i], err = c.engs[i].recoverExpired(ctx); err != nil {
				t.Fatal(err)
			}
			return len(comps[i]) == 1
		})
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	startLine := make(chan struct{})
	for _, i := range []int{1, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			_, errs[i] = c.engs[i].step(ctx, comps[i], false)
		}()
	}
	close(startLine)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkFinishedOnce(t, c.stores[1], b.ID)
	a1, a2 := comps[1][0].act, comps[2][0].act
	if a1.run.ID != a2.run.ID || a1.attempt != a2.attempt || a1.owner != c.engs[0].owner {
		t.Fatalf("the instances recovered %s#%d and %s#%d, want the same attempt of the dead instance", a1.run.ID, a1.attempt, a2.run.ID, a2.attempt)
	}
	if n := countRows(t, c.stores[1], `SELECT COUNT(*) FROM attempts WHERE state = 'interrupted' AND run_id = ? AND attempt = ?`, a1.run.ID, a1.attempt); n != 1 {
		t.Errorf("the recovered attempt is not recorded interrupted (%d)", n)
	}
}

// An instance whose attempts another instance took over (here a clock
// ten seconds ahead makes the other see its leases expired, although it
// heartbeats) cancels its own runs of them and never records them; the
// backfill still succeeds, each attempt recorded once.
func TestClusterInstanceLosesAttemptsTakenOver(t *testing.T) {
	t.Parallel()
	ws := teststore.Assets(teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-01-04}}"))
	log := newBuildLog()
	var first sync.Once
	lost := make(chan error, 1)
	blocking := funcExec(func(ctx context.Context, w Work) Result {
		blocked := false
		first.Do(func() { blocked = true })
		if !blocked {
			return log.exec(0, time.Millisecond).Execute(ctx, w)
		}
		<-ctx.Done()
		lost <- context.Cause(ctx)
		return Result{Err: context.Cause(ctx)}
	})
	c := newClusterEnv(t, 2, ws, func(i int) Options {
		if i == 0 {
			return Options{Executor: blocking, LeaseTTL: time.Second}
		}
		return Options{Executor: log.exec(i, time.Millisecond), LeaseTTL: time.Second}
	})
	c.engs[1].Now = func() time.Time { return time.Now().Add(10 * time.Second) }
	c.start(0, false)
	b := c.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 3, MaxConcurrentRuns: 1})
	poll.Eventually(t, 10*time.Second, "the first attempt to start", func() bool {
		return countRows(t, c.stores[0], `SELECT COUNT(*) FROM attempts WHERE owner = ?`, c.engs[0].owner) == 1
	})
	c.start(1, false)
	wantEndedWith(t, lost, errLost, "the attempt taken over", "the instance still runs the attempt another recorded")
	c.wait(1, b.ID, 30*time.Second, db.BackfillSucceeded)
	poll.Eventually(t, 10*time.Second, "the instance to drop the attempt", func() bool { return c.engs[0].activeCount() == 0 })
	steps := c.engs[0].steps.Load()
	poll.Eventually(t, 10*time.Second, "two more steps of the instance", func() bool { return c.engs[0].steps.Load() >= steps+2 })
	checkFinishedOnce(t, c.stores[1], b.ID)
	if n := countRows(t, c.stores[1], `SELECT COUNT(*) FROM attempts WHERE state = 'interrupted' AND owner = ? AND attempt = 1`, c.engs[0].owner); n != 1 {
		t.Errorf("the first attempt: %d recorded interrupted under its owner's name, want 1", n)
	}
}

// A pause on one instance stops planning on every instance: once it has
// committed, no instance starts another attempt of the backfill; resumed
// on another instance, the backfill ends with every partition built once.
func TestClusterPauseStopsEveryInstance(t *testing.T) {
	t.Parallel()
	ws := teststore.Assets(teststore.Asset("a.daily", "{daily: {start: 2024-01-01, end: 2024-07-01}}"))
	log := newBuildLog()
	c := newClusterEnv(t, 3, ws, func(i int) Options { return Options{Executor: log.exec(i, 20*time.Millisecond), MaxConcurrentRuns: 2} })
	for i := range 3 {
		c.start(i, false)
	}
	b := c.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 6})
	ctx := context.Background()
	poll.Eventually(t, 20*time.Second, "20 runs done", func() bool {
		got, err := c.stores[0].Backfill(ctx, b.ID)
		return err == nil && got.RunsSucceeded >= 20
	})
	if _, err := c.engs[1].Transition(ctx, b.ID, ActPause, 0, false, "t"); err != nil {
		t.Fatal(err)
	}
	paused := db.Millis(time.Now())
	// A second of steps on every instance.
	for _, e := range c.engs {
		steps := e.steps.Load()
		poll.Eventually(t, 10*time.Second, "steps", func() bool { return e.steps.Load() >= steps+5 })
	}
	if n := countRows(t, c.stores[0], `SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ? AND a.started_at > ?`, b.ID, paused); n != 0 {
		t.Errorf("%d attempts started after the pause committed", n)
	}
	if _, err := c.engs[2].Transition(ctx, b.ID, ActResume, 0, false, "t"); err != nil {
		t.Fatal(err)
	}
	got := c.wait(0, b.ID, 60*time.Second, db.BackfillSucceeded)
	checkChunksPlannedOnce(t, c.stores[0], b.ID, got.TotalChunks)
	checkFinishedOnce(t, c.stores[0], b.ID)
	log.mu.Lock()
	defer log.mu.Unlock()
	for k, n := range log.builds {
		if n != 1 {
			t.Errorf("%s built %d times", k, n)
		}
	}
	if int64(len(log.builds)) != got.TotalPartitions || len(log.overlaps) > 0 {
		t.Errorf("%d partitions built of %d, overlaps %v", len(log.builds), got.TotalPartitions, log.overlaps)
	}
}

// wantEndedWith waits up to 10 s for the cause an attempt (what) ended
// with, on causes, and reports it when it is not want; a wait that runs
// out fails the test with stuck.
func wantEndedWith(t *testing.T, causes <-chan error, want error, what, stuck string) {
	t.Helper()
	select {
	case err := <-causes:
		if err != want {
			t.Errorf("%s ended with %v, want %v", what, err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
	}
}
