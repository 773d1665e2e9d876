package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// funcExec adapts a function to Executor.
type funcExec func(ctx context.Context, w Work) Result

func (f funcExec) Execute(ctx context.Context, w Work) Result { return f(ctx, w) }

// partsResult is the Result of a call that builds w's partitions in order:
// one for which fail (nil: none) says failed fails with its message, and
// the call then fails with callErr ("": the call reports no error); the
// others are materialized.
func partsResult(w Work, callErr string, fail func(p string) (msg string, failed bool)) Result {
	res := Result{Parts: map[string]PartResult{}}
	for _, p := range w.Partitions {
		if fail != nil {
			if msg, failed := fail(p); failed {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: msg}
				if callErr != "" {
					res.Err = errors.New(callErr)
				}
				continue
			}
		}
		res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
	}
	return res
}

func inputErr(t *testing.T, err error, field string, conflict bool) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("want an input error on %q, got %v", field, err)
	}
	if ie.Field != field || ie.Conflict != conflict {
		t.Fatalf("want field %q conflict %v, got %+v", field, conflict, ie)
	}
}

func countRows(t *testing.T, s *db.Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.RawReader().Get(&n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

const multiWS = `
defaults:
  retries: {max_attempts: 2, backoff: 5ms}
assets:
  up.hourly:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-01-03-00:00"}}
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms}}
  down.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-03}}
    deps: [up.hourly]
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms}}
  feat:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01, end: 2025-01-11}}
        region: {static: [eu, us, apac]}
    executor: {demo: {duration: 1ms}}
`

func TestSelectorResolutionAndPreview(t *testing.T) {
	t.Parallel()
	eachTestEnv(t, dailyWS+multiWS[strings.Index(multiWS, "assets:\n")+len("assets:\n"):], Options{Executor: NoopExecutor{}}, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		id := env.ids["a.daily"]
		// Seed statuses: 2025-01-01..05 materialized (01 with old code), 06 failed.
		var ms []db.Materialization
		for d := 1; d <= 6; d++ {
			st, code := db.StatusMaterialized, ""
			if d == 6 {
				st = db.StatusFailed
			}
			if d == 1 {
				code = "old"
			}
			ms = append(ms, db.Materialization{AssetID: id, AssetKey: "a.daily", Partition: fmt.Sprintf("2025-01-%02d", d), Idx: int64(d - 1), Status: st, CodeVersion: code, RunID: "seed", At: time.Now()})
		}
		if _, err := env.store.RecordMaterializations(ctx, ms, "test", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		pv, err := env.eng.Preview(ctx, Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-31"}, ChunkSize: 7, MaxConcurrentRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		if pv.TotalPartitions != 31 || pv.TotalChunks != 5 || len(pv.FirstChunk.Keys) != 7 || pv.FirstChunk.Keys[6] != "2025-01-07" {
			t.Fatalf("preview %+v", pv)
		}
		want := map[string]int64{"materialized": 5, "failed": 1, "missing": 25, "in_progress": 0, "stale": 1}
		for k, v := range want {
			if pv.Status[k] != v {
				t.Errorf("status[%s] = %d, want %d (%v)", k, pv.Status[k], v, pv.Status)
			}
		}
		if pv.EstimateSeconds != nil || len(pv.Basis.NoHistory) != 1 || pv.Basis.NoHistory[0] != "a.daily" {
			t.Errorf("estimate %v %+v, want none, a.daily without history", pv.EstimateSeconds, pv.Basis)
		}
		// Status filter: only missing and failed, snapshotted as ranges.
		c, err := env.eng.Create(ctx, Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "filter", Statuses: []string{"missing", "failed"}, Start: "2025-01-01", End: "2025-01-31"}, ChunkSize: 10, MaxConcurrentRuns: 1}, "", "t")
		if err != nil {
			t.Fatal(err)
		}
		if c.Backfill.TotalPartitions != 26 || c.Backfill.TotalChunks != 3 {
			t.Fatalf("filter backfill %+v", c.Backfill)
		}
		rs, _ := db.AllSegmentRanges(ctx, env.store.RawReader(), c.Backfill.ID, 0)
		if len(rs) != 1 || rs[0].Lo != 5 || rs[0].Hi != 30 {
			t.Fatalf("ranges %+v", rs)
		}
		// Stale filter.
		pvs, err := env.eng.Preview(ctx, Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "filter", Statuses: []string{"stale"}}, ChunkSize: 10, MaxConcurrentRuns: 1})
		if err != nil || pvs.TotalPartitions != 1 || pvs.FirstChunk.Keys[0] != "2025-01-01" {
			t.Fatalf("stale filter %+v %v", pvs, err)
		}
		// Explicit keys.
		pve, err := env.eng.Preview(ctx, Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "explicit", Keys: []string{"2025-03-01", "2025-01-06", "2025-03-01"}}, ChunkSize: 1, MaxConcurrentRuns: 1})
		if err != nil || pve.TotalPartitions != 2 || pve.Status["failed"] != 1 || pve.Status["missing"] != 1 {
			t.Fatalf("explicit %+v %v", pve, err)
		}
		// Dimension filter on a multi-dimensional asset: 10 days × eu.
		pvd, err := env.eng.Preview(ctx, Request{Assets: []string{"feat"}, Selector: Selector{Type: "filter", Dimensions: map[string][]string{"region": {"eu"}}}, ChunkSize: 4, MaxConcurrentRuns: 1})
		if err != nil || pvd.TotalPartitions != 10 || pvd.TotalChunks != 3 || !strings.HasSuffix(pvd.FirstChunk.Keys[1], "|eu") {
			t.Fatalf("dimension filter %+v %v", pvd, err)
		}
		// A dimension or a dimension value the asset does not have names itself.
		for _, c := range []struct {
			asset string
			dims  map[string][]string
			field string
		}{
			{"feat", map[string][]string{"region": {"eu", "mars"}}, "selector.dimensions.region[1]"},
			{"feat", map[string][]string{"date": {"2025-13-01"}}, "selector.dimensions.date[0]"},
			{"feat", map[string][]string{"zone": {"eu"}}, "selector.dimensions"},
			{"a.daily", map[string][]string{"region": {"eu"}}, "selector.dimensions"},
		} {
			_, err := env.eng.Preview(ctx, Request{Assets: []string{c.asset}, Selector: Selector{Type: "filter", Dimensions: c.dims}, ChunkSize: 4, MaxConcurrentRuns: 1})
			inputErr(t, err, c.field, false)
		}
		// Two time assets of different granularity: a daily range selects the hours of those days.
		pvt, err := env.eng.Preview(ctx, Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range", Start: "2025-01-02", End: "2025-01-02"}, ChunkSize: 24, MaxConcurrentRuns: 1})
		if err != nil || pvt.TotalPartitions != 25 || pvt.FirstChunk.Keys[0] != "2025-01-02-00:00" {
			t.Fatalf("mixed granularity %+v %v", pvt, err)
		}
		// Two assets: chunks counted per asset, upstream first.
		pv2, err := env.eng.Preview(ctx, Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 10, MaxConcurrentRuns: 1})
		if err != nil || pv2.TotalPartitions != 50 || pv2.TotalChunks != 5+1 || pv2.Assets[0].Asset != "up.hourly" {
			t.Fatalf("two assets %+v %v", pv2, err)
		}
	})
}

func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	eachTestEnv(t, dailyWS, Options{Executor: NoopExecutor{}}, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		before := countRows(t, env.store, `SELECT COUNT(*) FROM events`)
		ok := Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 2, MaxConcurrentRuns: 1}
		cases := []struct {
			name  string
			mut   func(r *Request)
			field string
		}{
			{"chunk_size zero", func(r *Request) { r.ChunkSize = 0 }, "chunk_size"},
			{"chunk_size too big", func(r *Request) { r.ChunkSize = MaxChunkSize + 1 }, "chunk_size"},
			{"max_concurrent_runs", func(r *Request) { r.MaxConcurrentRuns = -1 }, "max_concurrent_runs"},
			{"end before start", func(r *Request) { r.Selector.Start, r.Selector.End = "2025-01-10", "2025-01-01" }, "selector.end"},
			{"key outside scheme", func(r *Request) { r.Selector.Start = "2024-12-01" }, "selector.start"},
			{"unknown asset", func(r *Request) { r.Assets = []string{"nope"} }, "assets[0]"},
			{"no asset", func(r *Request) { r.Assets = nil }, "assets"},
			{"bad selector", func(r *Request) { r.Selector.Type = "all" }, "selector.type"},
			{"empty selection", func(r *Request) { r.Selector = Selector{Type: "filter", Statuses: []string{"failed"}} }, "selector"},
			{"explicit empty", func(r *Request) { r.Selector = Selector{Type: "explicit"} }, "selector.keys"},
			{"explicit bad key", func(r *Request) { r.Selector = Selector{Type: "explicit", Keys: []string{"2025-01-01", "junk"}} }, "selector.keys[1]"},
			{"explicit bad key after a duplicate", func(r *Request) {
				r.Selector = Selector{Type: "explicit", Keys: []string{"2025-01-01", "2025-01-01", "junk"}}
			}, "selector.keys[2]"},
			{"explicit over limit", func(r *Request) { r.Selector = Selector{Type: "explicit", Keys: make([]string, MaxExplicitKeys+1)} }, "selector.keys"},
			{"unknown status", func(r *Request) { r.Selector = Selector{Type: "filter", Statuses: []string{"fresh"}} }, "selector.statuses[0]"},
		}
		for _, c := range cases {
			r := ok
			c.mut(&r)
			_, err := env.eng.Create(ctx, r, "", "t")
			inputErr(t, err, c.field, false)
			_, err = env.eng.Preview(ctx, r)
			inputErr(t, err, c.field, false)
		}
		if after := countRows(t, env.store, `SELECT COUNT(*) FROM events`); after != before {
			t.Fatalf("bad input wrote %d events", after-before)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM backfills`); n != 0 {
			t.Fatalf("bad input created %d backfills", n)
		}
		// Idempotency: same key, same body → same backfill; different body → conflict.
		a, err := env.eng.Create(ctx, ok, "k1", "t")
		if err != nil {
			t.Fatal(err)
		}
		b, err := env.eng.Create(ctx, ok, "k1", "t")
		if err != nil || !b.Replayed || b.Backfill.ID != a.Backfill.ID {
			t.Fatalf("replay %+v %v", b, err)
		}
		diff := ok
		diff.ChunkSize = 3
		_, err = env.eng.Create(ctx, diff, "k1", "t")
		inputErr(t, err, "Idempotency-Key", true)
		// Completing an unknown run.
		err = env.eng.Complete(ctx, "run_nope", nil, "")
		var ie *InputError
		if !errors.As(err, &ie) || !ie.NotFound {
			t.Fatalf("complete unknown run: %v", err)
		}
	})
}

// gate is an executor whose runs block until released.
type gate struct {
	mu      sync.Mutex
	release chan struct{}
	started atomic.Int64
	fail    func(w Work) bool
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) Execute(ctx context.Context, w Work) Result {
	g.started.Add(1)
	g.mu.Lock()
	ch := g.release
	g.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return Result{Err: context.Cause(ctx)}
	}
	if g.fail != nil && g.fail(w) {
		return Result{Err: errors.New("gate: failing on purpose")}
	}
	return Result{}
}

func (g *gate) open() {
	g.mu.Lock()
	close(g.release)
	g.mu.Unlock()
}

func TestStateTransitions(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		g.fail = func(w Work) bool { return w.Partitions[0] == "2025-01-01" }
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: g})
		env.start()
		ctx := context.Background()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "two runs started", func() bool { return g.started.Load() == 2 })
		b = env.wait(b.ID, db.BackfillRunning)
		if b.StateVersion != 2 {
			t.Fatalf("running at version %d", b.StateVersion)
		}
		// Refused: resume while running; stale expected version.
		_, err := env.eng.Transition(ctx, b.ID, ActResume, 0, false, "t")
		inputErr(t, err, "state", true)
		if !strings.Contains(err.Error(), "RUNNING") || !strings.Contains(err.Error(), "PAUSED") {
			t.Fatalf("refusal should name both states: %v", err)
		}
		_, err = env.eng.Transition(ctx, b.ID, ActPause, 1, false, "t")
		inputErr(t, err, "expected_state_version", true)
		p, err := env.eng.Transition(ctx, b.ID, ActPause, 2, false, "t")
		if err != nil || p.State != db.BackfillPaused || p.StateVersion != 3 {
			t.Fatalf("pause %+v %v", p, err)
		}
		_, err = env.eng.Transition(ctx, b.ID, ActPause, 0, false, "t")
		inputErr(t, err, "state", true)
		// Active runs finish while paused, one fails: still paused, failure counted, nothing new planned.
		g.open()
		poll.Eventually(t, 20*time.Second, "active runs finished", func() bool {
			b, _ := env.store.Backfill(ctx, b.ID)
			return b.RunsActive == 0 && b.RunsFailed == 1
		})
		env.steps(3) // the steps that would plan more, were the pause not kept
		p, _ = env.store.Backfill(ctx, b.ID)
		if p.State != db.BackfillPaused || p.NextChunk != 2 || p.RunsSucceeded != 1 {
			t.Fatalf("paused with failures: %+v", p)
		}
		// Paused with failures: retry-failed is allowed and holds exactly the failed partition.
		child, err := env.eng.RetryFailed(ctx, b.ID, RetryOptions{RequestID: "while-paused"}, "t")
		if err != nil || child.Backfill.TotalPartitions != 1 || child.Backfill.ParentBackfillID == nil || *child.Backfill.ParentBackfillID != b.ID {
			t.Fatalf("retry-failed while paused: %+v %v", child, err)
		}
		if keys := countRows(t, env.store, `SELECT COUNT(*) FROM backfill_ranges WHERE backfill_id = ? AND lo = 0 AND hi = 0`, child.Backfill.ID); keys != 1 {
			t.Fatalf("the child should hold index 0 (2025-01-01) only")
		}
		r, err := env.eng.Transition(ctx, b.ID, ActResume, p.StateVersion, false, "t")
		if err != nil || r.State != db.BackfillRunning {
			t.Fatalf("resume %+v %v", r, err)
		}
		f := env.wait(b.ID, db.BackfillFailed, db.BackfillSucceeded)
		if f.State != db.BackfillFailed || f.RunsSucceeded != 9 || f.RunsFailed != 1 || f.PartitionsFailed != 1 || f.FinishedAt == nil {
			t.Fatalf("final %+v", f)
		}
		// Terminal: every action refused.
		for _, act := range []string{ActPause, ActResume, ActCancel} {
			_, err := env.eng.Transition(ctx, b.ID, act, 0, false, "t")
			inputErr(t, err, "state", true)
		}
		if _, err := env.eng.Transition(ctx, "bf_nope", ActPause, 0, false, "t"); err == nil {
			t.Fatal("transition of an unknown backfill")
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		sw := newSwap(g)
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: sw})
		env.start()
		ctx := context.Background()
		// Cancel lets active runs finish: CANCELING until they do.
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "runs started", func() bool { return g.started.Load() == 2 })
		c, err := env.eng.Transition(ctx, b.ID, ActCancel, 0, false, "t")
		if err != nil || c.State != db.BackfillCanceling {
			t.Fatalf("cancel %+v %v", c, err)
		}
		env.steps(3) // the steps that would end or plan it, were the cancel not graceful
		if b2, _ := env.store.Backfill(ctx, b.ID); b2.State != db.BackfillCanceling || b2.NextChunk != 2 {
			t.Fatalf("canceling %+v", b2)
		}
		g.open()
		f := env.wait(b.ID, db.BackfillCanceled)
		if f.RunsSucceeded != 2 || f.NextChunk != 2 {
			t.Fatalf("canceled %+v", f)
		}
		// Cancel with terminate kills active runs.
		g2 := newGate()
		sw.set(g2)
		b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-02-01", End: "2025-02-10"}, ChunkSize: 1, MaxConcurrentRuns: 3})
		poll.Eventually(t, 20*time.Second, "runs started", func() bool { return g2.started.Load() == 3 })
		if _, err := env.eng.Transition(ctx, b.ID, ActCancel, 0, true, "t"); err != nil {
			t.Fatal(err)
		}
		f = env.wait(b.ID, db.BackfillCanceled)
		if f.RunsCanceled != 3 || f.PartitionsMaterialized != 0 {
			t.Fatalf("terminated %+v", f)
		}
		// Canceled partitions are given back: no in_progress left.
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_status WHERE status='in_progress'`); n != 0 {
			t.Fatalf("%d partitions left in progress", n)
		}
		// A pending backfill with nothing running is canceled at once.
		env.stop()
		b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-03-01", End: "2025-03-10"}, ChunkSize: 1, MaxConcurrentRuns: 3})
		c, err = env.eng.Transition(ctx, b.ID, ActCancel, 1, false, "t")
		if err != nil || c.State != db.BackfillCanceled || c.StateVersion != 3 {
			t.Fatalf("cancel pending %+v %v", c, err)
		}
	})
}

func TestLeaseOverlappingBackfills(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		var mu sync.Mutex
		building := map[string]bool{}
		var violations atomic.Int64
		ex := funcExec(func(ctx context.Context, w Work) Result {
			mu.Lock()
			for _, p := range w.Partitions {
				if building[p] {
					violations.Add(1)
				}
				building[p] = true
			}
			mu.Unlock()
			time.Sleep(3 * time.Millisecond)
			mu.Lock()
			for _, p := range w.Partitions {
				delete(building, p)
			}
			mu.Unlock()
			return Result{}
		})
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: ex, MaxConcurrentRuns: 16})
		env.start()
		a := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-03-31"}, ChunkSize: 3, MaxConcurrentRuns: 8})
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-15", End: "2025-03-15"}, ChunkSize: 2, MaxConcurrentRuns: 8})
		c := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "explicit", Keys: []string{"2025-02-01", "2025-02-02", "2025-01-20"}}, ChunkSize: 1, MaxConcurrentRuns: 8})
		for _, id := range []string{a.ID, b.ID, c.ID} {
			if f := env.wait(id, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded {
				t.Fatalf("backfill %+v", f)
			}
		}
		if v := violations.Load(); v > 0 {
			t.Fatalf("%d partitions built by two runs at once (executor view)", v)
		}
		// From the instances table: per partition, no two instances overlap in time.
		overlaps := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all x JOIN partition_instances_all y
		ON x.asset_id = y.asset_id AND x.partition_key = y.partition_key AND x.id < y.id
		WHERE x.started_at < y.finished_at AND y.started_at < x.finished_at`)
		if overlaps > 0 {
			t.Fatalf("%d overlapping instance pairs", overlaps)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all`); n != 90+60+3 {
			t.Fatalf("%d instances, want %d", n, 90+60+3)
		}
	})
}

func TestFairnessBetweenBackfills(t *testing.T) {
	t.Parallel()
	// SQLite only for now: its bounds (chunks of the big backfill planned
	// meanwhile) assume SQLite's step times; on PostgreSQL under a loaded
	// machine the big one ran past them once in four runs.
	func(t *testing.T, dialect db.Dialect) {
		// The runs wait at a gate while the test holds it: the big
		// backfill cannot run ahead while the test, descheduled on a
		// loaded machine, has not yet created the next one (it once was at
		// chunk 30 before the small one existed). Held, both slots end up
		// with runs of the big one waiting; released, the scheduler alone
		// decides who gets the slots they free.
		var gateMu sync.Mutex
		gate := make(chan struct{}) // held: the big one's 5th run on waits for the small one
		hold := func() { gateMu.Lock(); gate = make(chan struct{}); gateMu.Unlock() }
		release := func() { gateMu.Lock(); close(gate); gateMu.Unlock() }
		var runs, waiting atomic.Int64
		ex := funcExec(func(ctx context.Context, w Work) Result {
			if runs.Add(1) <= 4 {
				time.Sleep(3 * time.Millisecond)
				return Result{}
			}
			gateMu.Lock()
			g := gate
			gateMu.Unlock()
			waiting.Add(1)
			select {
			case <-g:
			case <-ctx.Done():
			}
			waiting.Add(-1)
			time.Sleep(3 * time.Millisecond)
			return Result{}
		})
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: ex, MaxConcurrentRuns: 2})
		env.start()
		ctx := context.Background()
		big := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-03-10"}, ChunkSize: 1, MaxConcurrentRuns: 10})
		poll.Eventually(t, 20*time.Second, "big started", func() bool {
			b, _ := env.store.Backfill(ctx, big.ID)
			return b.NextChunk >= 5
		})
		small := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-03-20", End: "2025-03-23"}, ChunkSize: 1, MaxConcurrentRuns: 10})
		release()
		env.wait(small.ID, db.BackfillSucceeded)
		b, _ := env.store.Backfill(ctx, big.ID)
		if b.State != db.BackfillRunning || b.NextChunk > 30 {
			t.Fatalf("the small backfill waited behind the big one: big at chunk %d of %d (%s)", b.NextChunk, b.TotalChunks, b.State)
		}
		// Priority first: a high-priority backfill created now goes before
		// the big one's remaining chunks. The gate holds the big one from
		// its next run on until it is created; with both slots waiting at
		// it, the big one plans nothing more meanwhile.
		hold()
		poll.Eventually(t, 20*time.Second, "both slots held at the gate", func() bool { return waiting.Load() == 2 })
		b, _ = env.store.Backfill(ctx, big.ID)
		pri := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-03-24", End: "2025-03-31"}, ChunkSize: 1, MaxConcurrentRuns: 10, Priority: 5})
		release()
		env.wait(pri.ID, db.BackfillSucceeded)
		// The big one's chunks planned by the time the priority backfill's
		// last chunk started (counted from the runs' rows: what the big one
		// planned after that, while the test, slow on a loaded machine,
		// had not yet seen the priority backfill end, is not its concern).
		planned := countRows(t, env.store, `SELECT COUNT(*) FROM runs WHERE backfill_id = ? AND created_at <=
			(SELECT MAX(a.started_at) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?)`, big.ID, pri.ID)
		if planned-b.NextChunk > 12 {
			t.Fatalf("big planned %d chunks while the priority backfill ran", planned-b.NextChunk)
		}
		// From the attempts: once the priority backfill started, every free slot
		// went to it until its last chunk started (plain rotation would have
		// given the big one every other slot).
		interleaved := countRows(t, env.store, `WITH p AS (SELECT MIN(a.started_at) AS first, MAX(a.started_at) AS last FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?)
		SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id, p WHERE r.backfill_id = ? AND a.started_at > p.first AND a.started_at < p.last`, pri.ID, big.ID)
		if interleaved != 0 {
			t.Fatalf("%d runs of the big backfill started while the priority backfill still had chunks to start", interleaved)
		}
		env.wait(big.ID, db.BackfillSucceeded)
	}(t, db.SQLite)
}

// TestExplicitPreviewCountsEveryKey: an explicit list longer than any page
// is counted whole, its consecutive runs by range and the scattered keys one
// by one, and both give the same counts as a range preview would.
func TestExplicitPreviewCountsEveryKey(t *testing.T) {
	t.Parallel()
	eachTestEnv(t, teststore.Assets(
		teststore.Asset("big.hourly", `{hourly: {start: "2024-01-01-00:00", end: "2026-01-01-00:00"}}`, "code_version: v2"),
	), Options{Executor: NoopExecutor{}}, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		id := env.ids["big.hourly"]
		t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		key := func(h int) string { return t0.Add(time.Duration(h) * time.Hour).Format("2006-01-02-15:04") }
		// 11,000 consecutive hours, then 2,000 hours every other hour: 13,000 keys.
		var keys []string
		for h := 0; h < 11000; h++ {
			keys = append(keys, key(h))
		}
		for h := 11001; len(keys) < 13000; h += 2 {
			keys = append(keys, key(h))
		}
		// Statuses in both parts, beyond the first 10,000 keys: materialized in the
		// run (one with old code: stale), materialized and failed among the scattered.
		seed := []struct {
			h          int
			status, cv string
		}{{10500, db.StatusMaterialized, "v2"}, {10501, db.StatusMaterialized, "v1"}, {11003, db.StatusMaterialized, "v2"}, {11005, db.StatusFailed, "v2"}, {11006, db.StatusMaterialized, "v2"}}
		var ms []db.Materialization
		for _, s := range seed {
			ms = append(ms, db.Materialization{AssetID: id, AssetKey: "big.hourly", Partition: key(s.h), Idx: int64(s.h), Status: s.status, CodeVersion: s.cv, RunID: "seed", At: time.Now()})
		}
		if _, err := env.store.RecordMaterializations(ctx, ms, "test", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		pv, err := env.eng.Preview(ctx, Request{Assets: []string{"big.hourly"}, Selector: Selector{Type: "explicit", Keys: keys}, ChunkSize: 100, MaxConcurrentRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		// 11006 is not in the list (odd hours only after 11,000).
		want := map[string]int64{"materialized": 3, "failed": 1, "missing": 13000 - 4, "in_progress": 0, "stale": 1}
		for k, v := range want {
			if pv.Status[k] != v {
				t.Errorf("status[%s] = %d, want %d (%v)", k, pv.Status[k], v, pv.Status)
			}
		}
		if pv.TotalPartitions != 13000 || pv.TotalChunks != 130 {
			t.Errorf("totals %d partitions, %d chunks", pv.TotalPartitions, pv.TotalChunks)
		}
		// The consecutive part alone, as explicit keys and as a range, agrees.
		pe, err := env.eng.Preview(ctx, Request{Assets: []string{"big.hourly"}, Selector: Selector{Type: "explicit", Keys: keys[:11000]}, ChunkSize: 100, MaxConcurrentRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := env.eng.Preview(ctx, Request{Assets: []string{"big.hourly"}, Selector: Selector{Type: "range", Start: key(0), End: key(10999)}, ChunkSize: 100, MaxConcurrentRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"materialized", "failed", "missing", "in_progress", "stale"} {
			if pe.Status[k] != pr.Status[k] {
				t.Errorf("%s: explicit %d, range %d", k, pe.Status[k], pr.Status[k])
			}
		}
		if pe.Status["materialized"] != 2 || pe.Status["stale"] != 1 {
			t.Errorf("consecutive part %v", pe.Status)
		}
	})
}

// TestReportDuringBuildKeepsTheLease: an external pipeline reporting a
// partition while a backfill's run builds it does not let another backfill
// build it beside that run. Before, the report ended the lease: backfill B
// started its chunk while A's command still ran (found by the API audit).
func TestReportDuringBuildKeepsTheLease(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		release := make(chan struct{})
		var mu sync.Mutex
		active, most, calls := 0, 0, 0
		ex := funcExec(func(ctx context.Context, w Work) Result {
			mu.Lock()
			active++
			calls++
			most = max(most, active)
			first := calls == 1
			mu.Unlock()
			if first {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			mu.Lock()
			active--
			mu.Unlock()
			return partsResult(w, "", nil)
		})
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: ex})
		env.start()
		a := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-10", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		poll.Eventually(t, 10*time.Second, "backfill A's run to start", func() bool { mu.Lock(); defer mu.Unlock(); return calls == 1 })
		ctx := context.Background()
		asset := env.ids["a.daily"]
		if _, err := env.store.RecordMaterializations(ctx, []db.Materialization{{AssetID: asset, AssetKey: "a.daily", Partition: "2025-01-10", Idx: 9,
			Status: db.StatusMaterialized, CodeVersion: "v1", RunID: "external-1", Source: "api", At: time.Now()}}, "test", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-10", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.steps(10) // many controller steps, any of which would start B's run were A's lease not respected
		mu.Lock()
		n := calls
		mu.Unlock()
		if n != 1 {
			t.Fatalf("backfill B's run started while A's builds the partition (%d runs started)", n)
		}
		runs, err := env.store.Runs(ctx, b.ID, nil, -1, 10)
		if err != nil || len(runs) != 1 || runs[0].State != db.RunQueued {
			t.Fatalf("backfill B's runs %+v %v, want one queued", runs, err)
		}
		bf, _ := env.store.Backfill(ctx, b.ID)
		if w, err := env.eng.WaitReason(ctx, bf, runs[0]); err != nil || w == nil || !strings.Contains(w.Reason, "which is building this chunk's") {
			t.Fatalf("B's wait reason %+v %v, want the lease A holds", w, err)
		}
		close(release)
		env.wait(a.ID, db.BackfillSucceeded)
		env.wait(b.ID, db.BackfillSucceeded)
		if most != 1 {
			t.Fatalf("%d runs built the partition at once, want 1", most)
		}
	})
}

// TestPreviewEstimateOfAnotherRunSize: when recent runs had another size
// than the chunks asked for, the estimate is a range — time per partition
// (the bottom) to time per run (the top) — and says why; with the same
// size it is one figure. Before, 100 one-partition runs of an asset whose
// runs of 24 took a second each were estimated at a tenth of their time
// (found by the UI audit).
func TestPreviewEstimateOfAnotherRunSize(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ex := funcExec(func(ctx context.Context, w Work) Result {
			time.Sleep(40 * time.Millisecond) // a fixed cost per run
			return partsResult(w, "", nil)
		})
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: ex})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-16"}, ChunkSize: 8, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillSucceeded)
		ctx := context.Background()
		req := Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-02-01", End: "2025-02-08"}, ChunkSize: 1, MaxConcurrentRuns: 1}
		pv, err := env.eng.Preview(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if pv.EstimateSeconds == nil || pv.EstimateRange == nil || pv.EstimateRange[0] != *pv.EstimateSeconds || pv.EstimateRange[1] < 4*pv.EstimateRange[0] {
			t.Fatalf("estimate %v, range %v (%+v), want a range from time per partition to 8 runs of ~40 ms, about 8 times more", pv.EstimateSeconds, pv.EstimateRange, pv.Basis)
		}
		if b := pv.Basis; len(b.Sizes) != 1 || b.Sizes[0].Asset != "a.daily" || math.Round(b.Sizes[0].PartitionsARun) != 8 || b.ChunkSize != 1 {
			t.Errorf("basis %+v does not say why it is a range (a.daily had about 8 partitions a run, these have 1)", b)
		}
		req.ChunkSize = 8
		if pv, err = env.eng.Preview(ctx, req); err != nil || pv.EstimateSeconds == nil || pv.EstimateRange != nil {
			t.Fatalf("same size: %v %v %+v %v, want one figure", pv.EstimateSeconds, pv.EstimateRange, pv.Basis, err)
		}
	})
}
