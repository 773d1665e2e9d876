package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// The throughput chart counts what each attempt built and failed, partition
// by partition: an attempt that built two partitions and failed one adds 2
// and 1, and one canceled (or interrupted) adds nothing. Before, the chart
// counted every partition of an attempt that did not succeed as failed, so
// a retried chunk counted its partitions again and a canceled one drew a bar
// of failures the counters never showed.
func TestThroughputCountsPartitionOutcomes(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		for i, run := range []string{"run_a", "run_b"} {
			queueRun(t, f, run, i, 3)
		}
		at := db.Millis(f.now)
		parts := func(lo int64) []db.PartRef {
			return []db.PartRef{{Key: f.sp.Key(lo), Idx: lo}, {Key: f.sp.Key(lo + 1), Idx: lo + 1}, {Key: f.sp.Key(lo + 2), Idx: lo + 2}}
		}
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v", Parts: parts(0)},
			{RunID: "run_b", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v", Parts: parts(3)},
		}}, f.now)
		a := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptFailed,
			Error: "1 of 3 partitions failed", RunState: db.RunQueued, CodeVersion: "v", Started: at, Parts: parts(0)}
		a.Parts[0].Status, a.Parts[1].Status, a.Parts[2].Status, a.Parts[2].Error = db.StatusMaterialized, db.StatusMaterialized, db.StatusFailed, "boom"
		b := db.AttemptEnd{RunID: "run_b", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptCanceled,
			RunState: db.RunCanceled, CodeVersion: "v", Started: at, Parts: parts(3)}
		for i := range b.Parts {
			b.Parts[i].Status = db.AttemptCanceled
		}
		later := f.now.Add(time.Second)
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{a, b}}, later)
		pts, err := f.store.BackfillThroughput(ctx, "bf_test", at, 60_000)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 1 || pts[0].Done != 2 || pts[0].Failed != 1 {
			t.Fatalf("throughput %+v, want one bucket of 2 built and 1 failed", pts)
		}
		atts, err := f.store.Attempts(ctx, "run_a")
		if err != nil || len(atts) != 1 || atts[0].Materialized == nil || *atts[0].Materialized != 2 || atts[0].Failed == nil || *atts[0].Failed != 1 {
			t.Fatalf("run_a's attempt %+v %v, want 2 materialized and 1 failed", atts, err)
		}
	})
}
