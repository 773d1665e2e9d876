package jobs

import (
	"context"
	"testing"
	"time"
)

// TestPreviewAtTheTick: the next tick of an hourly schedule builds an hour
// that has not closed yet, which Preview (as of now) refuses; PreviewAt
// resolves it as of the tick: one missing partition, nothing written.
func TestPreviewAtTheTick(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  hourly:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		sc := e.ws.Load().Schedule("hourly")
		tick, _ := sc.Cron.Next(time.Now().Add(time.Hour)) // its hour closes in the future
		req, skip, err := e.eng.TickRequest(ctx, sc, tick)
		if err != nil || skip != "" {
			t.Fatal(err, skip)
		}
		if _, err := e.eng.Preview(ctx, req); err == nil {
			t.Fatal("Preview as of now accepted an hour that has not closed")
		}
		pv, err := e.eng.PreviewAt(ctx, req, tick)
		if err != nil || pv.TotalPartitions != 1 || pv.Status["missing"] != 1 {
			t.Fatalf("PreviewAt: %v %+v", err, pv)
		}
		if n := len(e.backfills()); n != 0 {
			t.Fatalf("a preview created %d backfills", n)
		}
	})
}
