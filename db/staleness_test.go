package db_test

import (
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// The counting passes are memoized per facts, and a memoized count is not
// served past the moment a fresh partition turns FRESHNESS_LATE (nor before
// the time it was counted at): counts at every time equal a count from the
// rows.
func TestStaleCountsMemoFollowTime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspace(t, `assets:
  a:
    partitions: {static: [x, y, z]}
    freshness: {max_lag: 1h}
    executor: {demo: {duration: 1s}}
`, now)
	a := ws.Asset("a")
	sp := a.Scheme.Space(now, nil)
	// y built at now: fresh until now + 1 h; x built 2 h ago: late.
	for key, at := range map[string]time.Time{"y": now, "x": now.Add(-2 * time.Hour)} {
		i, _ := sp.Index(key)
		if _, err := store.RecordMaterializations(ctx, []db.Materialization{{AssetID: ids["a"], AssetKey: "a", Partition: key, Idx: i,
			Status: db.StatusMaterialized, RunID: "r" + key, Source: "test", At: at}}, "test", "", now); err != nil {
			t.Fatal(err)
		}
	}
	f, err := store.StaleFacts(ctx, staleInputAt(ws, ids, now), a)
	if err != nil {
		t.Fatal(err)
	}
	iy, _ := sp.Index("y")
	deadline := time.UnixMilli(f.StaleFromAt(iy))
	if f.Reason(iy, now) != catalog.Fresh || !deadline.Equal(now.Add(time.Hour+time.Millisecond)) {
		t.Fatalf("y at now: %s, deadline %s", f.Reason(iy, now), deadline)
	}
	n := sp.Len()
	// Count at now (memoized), then just before, at and after the deadline,
	// then at now again: each must say what the rows say at that time.
	for _, at := range []time.Time{now, deadline.Add(-time.Millisecond), deadline, deadline.Add(time.Hour), now} {
		want := int64(0)
		for i := range n {
			if r := f.Reason(i, at); r != catalog.Fresh && r != catalog.NeverMaterialized {
				want++
			}
		}
		for range 2 { // the second time from the memo
			if got := f.Counts(0, n-1, at).Stale() - f.Counts(0, n-1, at)[catalog.NeverMaterialized]; got != want {
				t.Fatalf("at %s: Counts says %d materialized stale, the rows %d", at, got, want)
			}
			if got := f.MaterializedStaleBuckets(0, n-1, n, at)[0]; got != want {
				t.Fatalf("at %s: MaterializedStaleBuckets says %d, the rows %d", at, got, want)
			}
			if got := f.BucketCounts(0, n-1, 2, at)[0][catalog.FreshnessLate] + f.BucketCounts(0, n-1, 2, at)[1][catalog.FreshnessLate]; got != want {
				t.Fatalf("at %s: BucketCounts says %d late, the rows %d", at, got, want)
			}
		}
	}
}
