package db_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// partitionStalenessFull is how one partition's staleness was computed
// before PartitionStalenessAt read only that partition and its upstream
// partitions: from the memoized facts of the whole asset (every row, every
// upstream row mapped), plus the status row for the evidence.
func partitionStalenessFull(t *testing.T, store *db.Store, in db.StaleInput, a *catalog.Asset, key string, now time.Time) catalog.Staleness {
	t.Helper()
	ctx := t.Context()
	idx, err := in.SpaceOf(a).Index(key)
	if err != nil {
		t.Fatal(err)
	}
	f, err := store.StaleFacts(ctx, in, a)
	if err != nil {
		t.Fatal(err)
	}
	pf := catalog.PartitionFacts{StaleFrom: catalog.NeverStale}
	st, err := store.Partition(ctx, f.ID, key)
	switch {
	case errors.Is(err, db.ErrNotFound):
	case err != nil:
		t.Fatal(err)
	default:
		pf = st.Facts()
		pf.Upstream = f.Upstream(idx)
		pf.StaleFrom = f.StaleFromAt(idx)
	}
	return catalog.Explain(pf, a.CodeVersion, a.Freshness, now)
}

// One partition's staleness, read from its own row and its upstream
// partitions' rows, equals the full computation over the whole asset for
// every partition of a workspace with every kind of mapping (time window
// finer and coarser, identity with an offset, multi-dimensional, all),
// taints, old code versions, failed and running attempts, upstream rebuilds
// (ties included) and freshness by lag and by deadline; also when the
// dependency of mapping all is read from the memoized upstream facts.
func TestPartitionStalenessMatchesFullComputation(t *testing.T) {
	teststore.SkipInRacePass(t)
	ctx := t.Context()
	now := time.Date(2025, 1, 12, 6, 0, 0, 0, time.UTC)
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		store, ws, ids := teststore.WithWorkspaceOn(t, d, `assets:
  raw:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-01-11-00:00"}}
    code_version: v1
    freshness: {max_lag: 2h}
    executor: {demo: {duration: 1s}}
  daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-11}}
    deps: [raw]
    code_version: v2
    freshness: {max_lag: 26h}
    executor: {demo: {duration: 1s}}
  shifted:
    partitions: {daily: {start: 2024-12-30, end: 2025-01-09}}
    deps: [daily]
    freshness: {by: "09:00", timezone: Europe/Berlin}
    executor: {demo: {duration: 1s}}
  monthly:
    partitions: {monthly: {start: 2024-12-01, end: 2025-03-01}}
    deps: [daily, raw]
    code_version: v1
    executor: {demo: {duration: 1s}}
  lookup:
    partitions: {static: [a, b, c]}
    freshness: {max_lag: 1h}
    executor: {demo: {duration: 1s}}
  regions:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01, end: 2025-01-11}}
        region: {static: [eu, us, apac]}
    deps: [daily, lookup]
    code_version: v3
    freshness: {max_lag: 30h}
    executor: {demo: {duration: 1s}}
  everything:
    partitions: {static: [x, y, z]}
    deps: [{asset: raw, mapping: all}, regions]
    freshness: {max_lag: 1h}
    executor: {demo: {duration: 1s}}
`, now)
		in := staleInputAt(ws, ids, now)
		rng := rand.New(rand.NewPCG(7, 11))
		seq := 0
		// A few times only, so that upstream partitions tie.
		times := []time.Time{now.Add(-90 * time.Hour), now.Add(-50 * time.Hour), now.Add(-27 * time.Hour), now.Add(-3 * time.Hour), now.Add(-2 * time.Hour), now.Add(-30 * time.Minute)}
		write := func(asset string, frac float64) {
			t.Helper()
			a := ws.Asset(asset)
			sp := in.SpaceOf(a)
			var ms []db.Materialization
			for i := range sp.Len() {
				if rng.Float64() >= frac {
					continue
				}
				seq++
				m := db.Materialization{AssetID: ids[asset], AssetKey: asset, Partition: sp.Key(i), Idx: i, Status: db.StatusMaterialized,
					CodeVersion: a.CodeVersion, RunID: fmt.Sprintf("r%d", seq), Source: "test", At: times[rng.IntN(len(times))]}
				switch r := rng.Float64(); {
				case r < 0.15:
					m.CodeVersion = "old"
				case r < 0.25:
					m.Status, m.Error = db.StatusFailed, "boom"
				}
				ms = append(ms, m)
			}
			record(t, store, ms, now)
		}
		for _, a := range []string{"raw", "lookup", "daily", "shifted", "monthly", "regions", "everything"} {
			write(a, 0.8)
		}
		// Rebuild some upstream partitions after their downstreams, fail some
		// rebuilds (materialized before, failed now), taint a few.
		write("raw", 0.3)
		write("daily", 0.3)
		write("lookup", 0.5)
		for _, p := range []struct{ asset, key string }{{"daily", "2025-01-03"}, {"raw", "2025-01-02-05:00"}, {"regions", "2025-01-04|us"}, {"everything", "y"}, {"monthly", "2025-01"}} {
			err := store.Taint(ctx, ids[p.asset], p.asset, p.key, "bad data", "admin", now.Add(-time.Hour))
			if err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatal(err)
			}
		}
		// A running attempt on a materialized partition.
		if _, err := store.RawWriter().Exec(`UPDATE partition_status SET status='in_progress' WHERE asset_id=? AND idx IN (1, 4)`, ids["daily"]); err != nil {
			t.Fatal(err)
		}

		check := func(label string) {
			t.Helper()
			reasons := map[catalog.StaleReason]int{}
			for _, a := range ws.Assets {
				sp := in.SpaceOf(a)
				for i := range sp.Len() {
					key := sp.Key(i)
					want := partitionStalenessFull(t, store, in, a, key, now)
					for _, version := range []int64{0, -1} {
						v := version
						if v < 0 {
							var err error
							if v, err = store.SyncStaleness(ctx, in); err != nil {
								t.Fatal(err)
							}
						}
						got, err := store.PartitionStalenessAt(ctx, in, a, key, now, v)
						if err != nil {
							t.Fatal(err)
						}
						if got != want {
							t.Fatalf("%s: %s %s (version %d):\n got  %+v\n want %+v", label, a.Key, key, v, got, want)
						}
					}
					reasons[want.Reason]++
				}
			}
			// The workspace exercises every reason.
			for _, r := range catalog.StaleReasons {
				if reasons[r] == 0 {
					t.Fatalf("%s: no partition is %s: %v", label, r, reasons)
				}
			}
		}
		check("store")
		restore := db.SetPartitionScanLimit(5)
		check("memoized upstream facts")
		restore()
		// After more writes (the memoized facts are patched, the direct reads
		// see them at once).
		write("raw", 0.2)
		write("regions", 0.3)
		check("after more writes")
	})
}
