package jobs

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// leaseWS: ten days of an asset whose partitions have no status row yet.
var leaseWS = teststore.Assets(oneAttemptAsset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "{demo: {duration: 1ms}}"))

// checkLeased asserts that asset's partitions 0 to n-1, built by the
// running attempts of runs, have no status row (their lease is their
// attempt's: one row write each, at the end) and that every reader shows
// them in progress under those runs' leases, the rest missing.
func checkLeased(t *testing.T, e *Engine, asset int64, assetKey string, sp catalog.Space, n int64, runs map[string]bool) {
	t.Helper()
	ctx := context.Background()
	if c := countRows(t, e.Store, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, asset); c != 0 {
		t.Fatalf("%d status rows written at the attempts' start, want none (the lease is the attempt's)", c)
	}
	size := sp.Len()
	rows, err := e.Store.StatusRange(ctx, asset, 0, size-1)
	if err != nil || int64(len(rows)) != n {
		t.Fatalf("grid rows %d (%v), want %d in progress", len(rows), err, n)
	}
	var keys []string
	for i, r := range rows {
		if r.Idx != int64(i) || r.Status != db.StatusInProgress || r.LeaseRunID == nil || !runs[*r.LeaseRunID] || r.LeaseInstanceID == nil {
			t.Fatalf("grid row %d: %+v, want in progress under one of %v", i, r, runs)
		}
		keys = append(keys, r.Key)
		if want := db.AttemptInstanceIDs(*r.LeaseRunID, 1, assetKey)(r.Key); *r.LeaseInstanceID != want {
			t.Fatalf("lease instance of %s: %s, want %s", r.Key, *r.LeaseInstanceID, want)
		}
	}
	p, err := e.Store.Partition(ctx, asset, keys[0])
	if err != nil || p.Status != db.StatusInProgress {
		t.Fatalf("partition page row %+v %v, want in progress", p, err)
	}
	if _, err := e.Store.Partition(ctx, asset, sp.Key(n)); err != db.ErrNotFound {
		t.Fatalf("a partition not leased: %v, want not found (missing)", err)
	}
	if c, err := e.Store.StatusCountsInRange(ctx, asset, 0, size-1); err != nil || c[db.StatusInProgress] != n || c.Total() != n {
		t.Fatalf("counts %v %v, want %d in progress", c, err, n)
	}
	if c, err := e.Store.BucketCounts(ctx, asset, 0, size-1, 5); err != nil || c[0][db.StatusInProgress] != min(5, n) {
		t.Fatalf("bucket counts (rows) %v %v", c, err)
	}
	if c, err := e.Store.BucketCounts(ctx, asset, 0, db.RollupBlock-1, db.RollupBlock); err != nil || c[0][db.StatusInProgress] != n {
		t.Fatalf("bucket counts (rollup) %v %v", c, err)
	}
	if ks, err := e.Store.InProgressKeys(ctx, asset, 0, size-1, 0); err != nil || !slices.Equal(ks, keys) {
		t.Fatalf("in-progress keys %v %v, want %v", ks, err, keys)
	}
	if hs, err := e.Store.LeaseHolders(ctx, asset, keys, "nobody"); err != nil || int64(len(hs)) != n {
		t.Fatalf("lease holders %v %v", hs, err)
	}
	if ps, err := e.Store.PartitionsAfter(ctx, asset, -1, []string{db.StatusInProgress}, 100); err != nil || int64(len(ps)) != n {
		t.Fatalf("API in_progress rows %d %v", len(ps), err)
	}
	if ps, err := e.Store.PartitionsAfter(ctx, asset, -1, []string{db.StatusFailed}, 100); err != nil || len(ps) != 0 {
		t.Fatalf("API failed rows %d %v", len(ps), err)
	}
	if holes, err := e.Store.MissingAfter(ctx, asset, -1, size, 1000); err != nil || int64(len(holes)) != size-n || holes[0] != n {
		t.Fatalf("missing %d from %v (%v), want %d from %d", len(holes), holes[:min(3, len(holes))], err, size-n, n)
	}
	at, err := e.Store.StatusesAt(ctx, asset, []int64{0, n - 1, n, n + 1})
	if err != nil || len(at) != 2 || at[0].Status != db.StatusInProgress || at[1].Status != db.StatusInProgress {
		t.Fatalf("statuses at %v %v", at, err)
	}
	if sel, err := e.Store.SelectionRows(ctx, asset, 0, size-1); err != nil || int64(len(sel)) != n || sel[0].Status != db.StatusInProgress {
		t.Fatalf("selection rows %v %v", sel, err)
	}
	insts, err := e.Store.Instances(ctx, asset, keys[0], 10)
	if err != nil || len(insts) != 1 || insts[0].Status != db.StatusInProgress || insts[0].ID != *rows[0].LeaseInstanceID {
		t.Fatalf("history %+v %v, want the instance in progress", insts, err)
	}
	ri, err := e.Store.RunInstances(ctx, asset, []string{*rows[0].LeaseRunID}, keys)
	if err != nil || len(ri) == 0 || ri[0].Status != db.StatusInProgress {
		t.Fatalf("run instances %+v %v", ri, err)
	}
	pv, err := e.Preview(ctx, Request{Assets: []string{assetKey}, Selector: Selector{Type: "range", Start: sp.Key(0), End: sp.Key(n + 2)}, ChunkSize: 10, MaxConcurrentRuns: 1})
	if err != nil || pv.Status[db.StatusInProgress] != n || pv.Status[db.StatusMissing] != 3 {
		t.Fatalf("preview %+v %v, want %d in progress and 3 missing", pv, err, n)
	}
}

// TestLeaseWithoutRowReadsInProgress: an attempt on partitions that have
// no status row writes none when it starts; every reader shows them in
// progress meanwhile, and the attempt's end writes each row once.
func TestLeaseWithoutRowReadsInProgress(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		env := newTestEnvOn(t, dialect, leaseWS, Options{Executor: g})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 5, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "both chunks to run", func() bool { return g.started.Load() == 2 })
		ctx := context.Background()
		runs, err := env.store.Runs(ctx, b.ID, nil, -1, 10)
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs %+v %v", runs, err)
		}
		asset := env.ids["a.daily"]
		sp := env.ws.Asset("a.daily").Scheme.Space(time.Now(), nil)
		checkLeased(t, env.eng, asset, "a.daily", sp, 10, map[string]bool{runs[0].ID: true, runs[1].ID: true})
		close(g.release)
		env.wait(b.ID, db.BackfillSucceeded)
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_status_all WHERE asset_id=? AND status='materialized' AND lease_instance_id IS NULL`, asset); n != 10 {
			t.Fatalf("%d rows materialized, want 10", n)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM attempts WHERE lease IS NOT NULL OR lease_lo IS NOT NULL`); n != 0 {
			t.Fatalf("%d finished attempts keep a lease", n)
		}
		counts, err := env.store.AssetCounts(ctx)
		if err != nil || counts[asset][db.StatusMaterialized] != 10 || counts[asset].Total() != 10 {
			t.Fatalf("rollup %v %v, want 10 materialized", counts[asset], err)
		}
	})
}

// TestOverlappingBackfillsRespectALeaseWithoutRow: a chunk whose
// partitions another backfill's attempt leases without a status row waits
// for it (the planner's lease check reads the attempt's lease) and says
// why; no partition is built by two attempts at once.
func TestOverlappingBackfillsRespectALeaseWithoutRow(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		env := newTestEnvOn(t, dialect, leaseWS, Options{Executor: g, MaxConcurrentRuns: 8})
		env.start()
		a := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 10, MaxConcurrentRuns: 1})
		poll.Eventually(t, 20*time.Second, "backfill A's chunk to run", func() bool { return g.started.Load() == 1 })
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-08", End: "2025-01-20"}, ChunkSize: 13, MaxConcurrentRuns: 1})
		c := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "explicit", Keys: []string{"2025-01-03"}}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.steps(10) // any of which would start B's or C's run were A's lease not read
		if n := g.started.Load(); n != 1 {
			t.Fatalf("%d attempts started, want only A's: B and C overlap its lease", n)
		}
		ctx := context.Background()
		for _, id := range []string{b.ID, c.ID} {
			runs, err := env.store.Runs(ctx, id, nil, -1, 10)
			if err != nil || len(runs) != 1 || runs[0].State != db.RunQueued {
				t.Fatalf("runs of %s: %+v %v, want one queued", id, runs, err)
			}
			bf, _ := env.store.Backfill(ctx, id)
			if w, err := env.eng.WaitReason(ctx, bf, runs[0]); err != nil || w == nil || !strings.Contains(w.Reason, "which is building this chunk's") {
				t.Fatalf("wait reason of %s: %+v %v, want A's lease", id, w, err)
			}
		}
		close(g.release)
		for _, id := range []string{a.ID, b.ID, c.ID} {
			env.wait(id, db.BackfillSucceeded)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all x JOIN partition_instances_all y
		ON x.asset_id = y.asset_id AND x.partition_key = y.partition_key AND x.id < y.id
		WHERE x.started_at < y.finished_at AND y.started_at < x.finished_at`); n > 0 {
			t.Fatalf("%d overlapping instance pairs", n)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all`); n != 10+13+1 {
			t.Fatalf("%d instances, want %d", n, 10+13+1)
		}
	})
}

// TestCrashRecoveryOfALeaseWithoutRow: attempts whose server died while
// they leased partitions without a status row are found through their
// lease and interrupted; the partitions are missing again (no row, the
// rollup exact), and replaying the events gives the same tables, during the
// lease and after.
func TestCrashRecoveryOfALeaseWithoutRow(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		t.Cleanup(func() { close(g.release) })
		env := newTestEnvOn(t, dialect, leaseWS, Options{Executor: g})
		ctx := context.Background()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"}, ChunkSize: 5, MaxConcurrentRuns: 2})
		// The first server plans and starts the attempts (under a fresh
		// heartbeat, as it would), and never heartbeats again (as if killed).
		poll.Eventually(t, 20*time.Second, "both chunks to start", func() bool {
			if err := env.eng.heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := env.eng.step(ctx, nil, true); err != nil {
				t.Fatal(err)
			}
			return g.started.Load() == 2
		})
		asset := env.ids["a.daily"]
		sp := env.ws.Asset("a.daily").Scheme.Space(time.Now(), nil)
		runs, err := env.store.Runs(ctx, b.ID, nil, -1, 10)
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs %+v %v", runs, err)
		}
		checkLeased(t, env.eng, asset, "a.daily", sp, 10, map[string]bool{runs[0].ID: true, runs[1].ID: true})
		teststore.ReplayEquals(t, env.store)

		// The next server interrupts them.
		next, err := NewEngine(ctx, env.store, func() (*catalog.Workspace, map[string]int64) { return env.ws, env.ids },
			slog.New(slog.NewTextHandler(io.Discard, nil)), Options{Executor: newGate(), LeaseTTL: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		comps, err := next.recoverExpired(ctx)
		if err != nil || len(comps) != 2 {
			t.Fatalf("recovered %d attempts (%v), want 2", len(comps), err)
		}
		for _, c := range comps {
			if len(c.act.parts) != 5 {
				t.Fatalf("recovered attempt of %s with %d partitions, want its 5 leased ones", c.act.run.ID, len(c.act.parts))
			}
		}
		if _, err := next.step(ctx, comps, false); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM attempts WHERE state='interrupted' AND lease IS NULL`); n != 2 {
			t.Fatalf("%d attempts interrupted with their lease ended, want 2", n)
		}
		rows, err := env.store.StatusRange(ctx, asset, 0, sp.Len()-1)
		if err != nil || len(rows) != 0 {
			t.Fatalf("grid after recovery: %+v %v, want every partition missing again", rows, err)
		}
		if holes, err := env.store.MissingAfter(ctx, asset, -1, sp.Len(), 1000); err != nil || int64(len(holes)) != sp.Len() {
			t.Fatalf("missing after recovery %d %v, want all %d", len(holes), err, sp.Len())
		}
		counts, err := env.store.AssetCounts(ctx)
		if err != nil || counts[asset].Total() != 0 {
			t.Fatalf("rollup after recovery %v %v, want empty", counts[asset], err)
		}
		if c, err := env.store.BucketCounts(ctx, asset, 0, db.RollupBlock-1, db.RollupBlock); err != nil || c[0].Total() != 0 {
			t.Fatalf("grid buckets after recovery %v %v", c, err)
		}
		teststore.ReplayEquals(t, env.store)
	})
}

// TestReadersNeverLoseALeasedPartition: while a backfill runs, a partition
// goes from missing to leased to its row, never back; the readers read the
// rows and the leases in one snapshot, so what they count never shrinks (a
// partition whose attempt ends between reading the rows and reading the
// leases would be in neither).
func TestReadersNeverLoseALeasedPartition(t *testing.T) {
	t.Parallel()
	// The reads are counted; the k-th attempt runs (the asset's demo
	// executor) once the test has read k/perRead times, so the backfill (n/10 chunks) cannot end before 10 reads
	// however slow the reads are beside it (a loaded machine could read
	// fewer times than the backfill took to run). The dialects' subtests
	// run one after the other.
	// 2,000 partitions; 500 in the race pass (-short), whose reads and
	// steps the race detector makes ten times slower. The gate keeps ten
	// reads in either.
	n, end := int64(2000), "2025-03-25-07:00"
	if testing.Short() {
		n, end = 500, "2025-01-21-19:00"
	}
	perRead := n / 10 / 10 // attempts (of 10 partitions) per read
	var readsDone, begun atomic.Int64
	ex := funcExec(func(ctx context.Context, w Work) Result {
		for k := begun.Add(1); readsDone.Load() < k/perRead; {
			select {
			case <-ctx.Done():
				return Result{Err: ctx.Err()}
			case <-time.After(time.Millisecond):
			}
		}
		return DemoExecutor{}.Execute(ctx, w) // the asset's 0 to 1 ms
	})
	eachTestEnv(t, `
assets:
  a.hourly:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-04-01-00:00"}}
    executor: {demo: {duration: 0ms-1ms}}
`, Options{MaxConcurrentRuns: 8, Executor: ex}, func(t *testing.T, env *testEnv) {
		readsDone.Store(0)
		begun.Store(0)
		env.start()
		asset := env.ids["a.hourly"]
		b := env.create(Request{Assets: []string{"a.hourly"}, Selector: Selector{Type: "range", Start: "2025-01-01-00:00", End: end}, ChunkSize: 10, MaxConcurrentRuns: 8})
		if b.TotalPartitions != n {
			t.Fatalf("%d partitions, want %d", b.TotalPartitions, n)
		}
		ctx := context.Background()
		var rowsSeen, countSeen int64
		reads := 0
		for done := false; !done; {
			bf, err := env.store.Backfill(ctx, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			done = bf.State == db.BackfillSucceeded // this read is the last
			rows, err := env.store.StatusRange(ctx, asset, 0, n-1)
			if err != nil {
				t.Fatal(err)
			}
			c, err := env.store.StatusCountsInRange(ctx, asset, 1, n-2) // edges from the rows, the middle from the rollup
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(rows)) < rowsSeen || c.Total() < countSeen {
				t.Fatalf("read %d: %d partitions in progress or built (counted %d), after %d (%d) before: a partition was neither leased nor written",
					reads, len(rows), c.Total(), rowsSeen, countSeen)
			}
			rowsSeen, countSeen = int64(len(rows)), c.Total()
			reads++
			readsDone.Store(int64(reads))
		}
		if rowsSeen != n || reads < 10 {
			t.Fatalf("%d partitions after %d reads", rowsSeen, reads)
		}
	})
}
