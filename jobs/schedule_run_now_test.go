package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// TestScheduleRunNowBetweenTicks (issue 22 audit): "Run now" on an hourly
// schedule at :05 of an hourly asset, clicked at 10:25 — after the 10:05
// tick, when no hour has closed since — builds what that tick targeted,
// the hour 09:00, rather than launching nothing ("no window closed since
// the previous tick", which it answered for 55 minutes of every hour).
// Clicked at 11:02, the hour 10:00 closed since the previous tick at
// 10:05: it builds that one, as a tick then would.
func TestScheduleRunNowBetweenTicks(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "  hourly:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n")
	ctx := context.Background()
	for _, c := range []struct{ now, hour string }{
		{"2026-03-01 10:25:00", "2026-03-01-09:00"},
		{"2026-03-01 11:02:00", "2026-03-01-10:00"},
	} {
		now := at(t, c.now)
		e.eng.Now = func() time.Time { return now }
		r, err := e.sched.Trigger(ctx, "hourly", "alice")
		if err != nil || r.Tick.Outcome != db.TickLaunched || r.Backfill == nil {
			t.Fatalf("run now at %s: %+v %v", c.now, r.Tick, err)
		}
		if sel := r.Backfill.Selector; r.Backfill.TotalPartitions != 1 || !strings.Contains(sel, `"start":"`+c.hour+`"`) || !strings.Contains(sel, `"end":"`+c.hour+`"`) {
			t.Fatalf("run now at %s built %d partitions, %s; want the hour %s", c.now, r.Backfill.TotalPartitions, sel, c.hour)
		}
	}
}
