package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// finishRowless ends attempt 1 of run_a (startRowless) at later: the
// partitions idx, named by the keys and indexes of sp, with status each.
func finishRowless(t *testing.T, f fixture, sp catalog.Space, started int64, later time.Time, status func(i int64) string, idx ...int64) {
	t.Helper()
	end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: f.ids["t.hourly"], Asset: "t.hourly", State: db.AttemptFailed,
		RunState: db.RunFailed, CodeVersion: "v2", Started: started, Error: "some failed"}
	for _, i := range idx {
		p := db.PartRef{Key: sp.Key(i), Idx: i, Status: status(i)}
		if p.Status == db.StatusFailed {
			p.Error = "boom"
		}
		end.Parts = append(end.Parts, p)
	}
	emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
}

// healthAt is partition idx's health in f.
func healthAt(f *db.StaleFacts, idx int64, now time.Time) catalog.Health {
	h, _, _ := f.HealthAt(idx, now)
	return h
}

// sameFacts fails unless patched and full give every partition of the
// asset the same reason and materialization time.
func sameFacts(t *testing.T, patched, full *db.StaleFacts, now time.Time) {
	t.Helper()
	if patched.Rows() != full.Rows() {
		t.Fatalf("patched facts have %d rows, a reload %d", patched.Rows(), full.Rows())
	}
	for i := range full.N {
		if p, r := patched.Reason(i, now), full.Reason(i, now); p != r || patched.MatAtOf(i) != full.MatAtOf(i) || healthAt(patched, i, now) != healthAt(full, i, now) {
			t.Fatalf("partition %d: patched %s@%d, reloaded %s@%d", i, p, patched.MatAtOf(i), r, full.MatAtOf(i))
		}
	}
}

func span64(lo, hi int64) []int64 {
	var out []int64
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// The memoized facts follow a backfill's attempts by the runs of
// consecutive indexes their events list (one entry per chunk rather than
// one per partition): an attempt's start and its end, over two runs, are
// patched in, not reloaded, and the patched facts equal a full reload.
func TestStaleFactsFollowAttemptsByRuns(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		in := staleInputAt(f.ws, f.ids, f.now)
		facts := func() *db.StaleFacts {
			fa, err := f.store.StaleFacts(ctx, in, f.ws.Asset("t.hourly"))
			if err != nil {
				t.Fatal(err)
			}
			return fa
		}
		facts()
		reloads := f.store.StaleReloads()
		idx := append(span64(0, 40), span64(100, 120)...)
		started := startRowless(t, f, idx...)
		if fa := facts(); fa.Rows() != len(idx) || healthAt(fa, 5, f.now) != catalog.HealthInProgress {
			t.Fatalf("after the start: %d rows, partition 5 %s; want %d rows in progress", fa.Rows(), healthAt(fa, 5, f.now), len(idx))
		}
		later := f.now.Add(time.Second)
		finishRowless(t, f, f.sp, started, later, func(i int64) string {
			if i >= 110 {
				return db.StatusFailed
			}
			return db.StatusMaterialized
		}, idx...)
		patched := facts()
		if n := f.store.StaleReloads() - reloads; n != 0 {
			t.Fatalf("an attempt's start and end reloaded the facts %d times; want patches", n)
		}
		if patched.Reason(5, f.now) != catalog.Fresh || patched.MatAtOf(5) != db.Millis(later) || patched.Reason(115, f.now) == catalog.Fresh {
			t.Fatalf("after the end: partition 5 %s@%d, 115 %s", patched.Reason(5, f.now), patched.MatAtOf(5), patched.Reason(115, f.now))
		}
		sameFacts(t, patched, reloadAfterUnknownEvent(t, f.store, f.now, facts), f.now)
	})
}

// A scheme change re-indexes an asset's partitions: the memoized facts,
// held by the old indexes, are reloaded rather than patched. An attempt
// that began before the change ends with its old indexes in its event; its
// partitions are patched in by their keys, since its runs no longer hold in
// the new space (taken as runs, 100 to 109 were patched again and 52 to 61
// stayed in progress).
func TestStaleFactsAfterAReindex(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		factsOf := func(ws *catalog.Workspace) *db.StaleFacts {
			fa, err := f.store.StaleFacts(ctx, staleInputAt(ws, f.ids, f.now), ws.Asset("t.hourly"))
			if err != nil {
				t.Fatal(err)
			}
			return fa
		}
		idx := span64(100, 110)
		started := startRowless(t, f, idx...)
		if fa := factsOf(f.ws); healthAt(fa, 100, f.now) != catalog.HealthInProgress {
			t.Fatalf("before the re-index: partition 100 %s", healthAt(fa, 100, f.now))
		}
		// The scheme now starts two days later: 100 becomes 52.
		ws := reindexHourly(t, f, "2025-01-03-00:00")
		sp := ws.Asset("t.hourly").Scheme.Space(f.now, nil)
		if i, _ := sp.Index(f.sp.Key(100)); i != 52 {
			t.Fatalf("partition %s at %d after the re-index, want 52", f.sp.Key(100), i)
		}
		fa := factsOf(ws)
		if healthAt(fa, 52, f.now) != catalog.HealthInProgress || healthAt(fa, 100, f.now) == catalog.HealthInProgress || fa.Rows() != len(idx) {
			t.Fatalf("after the re-index: 52 %s, 100 %s, %d rows; want 52 to 61 in progress", healthAt(fa, 52, f.now), healthAt(fa, 100, f.now), fa.Rows())
		}
		later := f.now.Add(time.Second)
		finishRowless(t, f, f.sp, started, later, func(int64) string { return db.StatusMaterialized }, idx...) // the old indexes
		patched := factsOf(ws)
		if patched.Reason(52, f.now) != catalog.Fresh || patched.MatAtOf(61) != db.Millis(later) || patched.Reason(100, f.now) == catalog.Fresh {
			t.Fatalf("after the end: 52 %s, 61 at %d, 100 %s; want 52 to 61 fresh", patched.Reason(52, f.now), patched.MatAtOf(61), patched.Reason(100, f.now))
		}
		sameFacts(t, patched, reloadAfterUnknownEvent(t, f.store, f.now, func() *db.StaleFacts { return factsOf(ws) }), f.now)
	})
}

// A page of the partitions list reads the leases of running attempts only
// until no later one can be on the page (firstLeases): three attempts
// leasing 10 partitions each, started out of index order, paged 4 at a time
// after every index, give exactly the partitions every reader sees, in
// order, in progress.
func TestPartitionsPageOfManyLeases(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		st := db.AttemptsStarted{Owner: "o", At: db.Millis(f.now)}
		for k, lo := range []int64{20, 0, 10} {
			run := []string{"run_a", "run_b", "run_c"}[k]
			queueRun(t, f, run, k, 10)
			a := db.AttemptStart{RunID: run, BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2"}
			for i := lo; i < lo+10; i++ {
				a.Parts = append(a.Parts, db.PartRef{Key: f.sp.Key(i), Idx: i})
			}
			st.Attempts = append(st.Attempts, a)
		}
		emit(t, f.store, db.EvAttemptsStarted, st, f.now)
		all, err := f.store.StatusRange(ctx, asset, 0, 1000)
		if err != nil || len(all) != 30 {
			t.Fatalf("%d partitions leased, want 30 (%v)", len(all), err)
		}
		for after := int64(-1); after < 31; after++ {
			for _, limit := range []int{1, 4, 10, 11} {
				page, err := f.store.PartitionsAfter(ctx, asset, after, nil, limit)
				if err != nil {
					t.Fatal(err)
				}
				var want []db.PartitionStatus
				for _, r := range all {
					if r.Idx > after && len(want) < limit {
						want = append(want, r)
					}
				}
				if len(page) != len(want) {
					t.Fatalf("after %d, limit %d: %d partitions, want %d", after, limit, len(page), len(want))
				}
				for j := range want {
					if page[j].Key != want[j].Key || page[j].Idx != want[j].Idx || page[j].Status != db.StatusInProgress {
						t.Fatalf("after %d, limit %d: partition %d is %s (%d, %s), want %s", after, limit, j, page[j].Key, page[j].Idx, page[j].Status, want[j].Key)
					}
				}
			}
		}
	})
}
