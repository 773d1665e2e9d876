package db_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// TestPartitionsPageOneSnapshot: a chunk started between the read of a
// page's status rows and the read of its holes is on the page once, as the
// snapshot saw it (missing), and in progress on the next read. Read in two
// snapshots (PartitionsAfter, then MissingAfter, as the partitions API
// did), it was in neither: the page skipped the chunk being started.
func TestPartitionsPageOneSnapshot(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		size := f.sp.Len()
		// Partitions 0..4 in progress (leased), 5..9 started between the reads.
		startRowless(t, f, 0, 1, 2, 3, 4)
		between := func() {
			queueRun(t, f, "run_b", 1, 5)
			st := db.AttemptStart{RunID: "run_b", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2"}
			for i := int64(5); i < 10; i++ {
				st.Parts = append(st.Parts, db.PartRef{Key: f.sp.Key(i), Idx: i})
			}
			emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: db.Millis(f.now), Attempts: []db.AttemptStart{st}}, f.now)
		}
		const limit = 20
		rows, holes, err := f.store.PartitionsPageBetween(ctx, asset, -1, size, nil, true, true, limit, between)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range rows {
			if r.Status != db.StatusInProgress || r.Idx > 4 {
				t.Errorf("row %d (%s) is %s, want only 0..4 in progress (the snapshot before run_b started)", r.Idx, r.Key, r.Status)
			}
			got = append(got, r.Idx)
		}
		got = append(got, holes...)
		slices.Sort(got)
		want := make([]int64, 0, limit)
		for i := int64(0); i < limit; i++ {
			want = append(want, i)
		}
		if !slices.Equal(got[:min(len(got), limit)], want) {
			t.Fatalf("page indexes %v, want each of 0..%d once (rows %d, holes %v)", got, limit-1, len(rows), holes)
		}
		// The next read sees run_b's lease.
		rows, holes, err = f.store.PartitionsPage(ctx, asset, -1, size, nil, true, true, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 10 || rows[9].Idx != 9 || rows[9].Status != db.StatusInProgress || len(holes) == 0 || holes[0] != 10 {
			t.Fatalf("after run_b started: %d rows (want 0..9 in progress), holes from %v (want from 10)", len(rows), holes[:min(len(holes), 3)])
		}
	})
}
