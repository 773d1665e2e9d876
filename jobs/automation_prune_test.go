package jobs

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// restart closes e's store and opens a new store, engine and scheduler on
// the same database (what a server restart does), with opts.
func (e *schedEnv) restart(opts Options) {
	e.t.Helper()
	loc := e.store.Location()
	e.store.Close()
	store, err := db.OpenLocation(loc, db.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { store.Close() })
	eng, err := NewEngine(context.Background(), store, func() (*catalog.Workspace, map[string]int64) { return e.ws.Load(), e.ids },
		slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.eng, e.sched = store, eng, NewScheduler(eng, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestPrunedTicksNeverLaunchAgain: every tick of a schedule pruned (its
// count kept), then a restart: evaluating again at the same instant, and
// later, launches no pruned tick again; the next tick launches once.
func TestPrunedTicksNeverLaunchAgain(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  h:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n    overlap: allow\n", func(t *testing.T, e *schedEnv) {
		t0 := at(t, "2026-03-01 10:00:00")
		for i := range 4 { // the scheduler first sees it at 10:00, then the ticks of 11:05, 12:05, 13:05 launch
			e.eval(t0.Add(time.Duration(i)*time.Hour + 5*time.Minute))
		}
		launched := len(e.backfills())
		if ts := e.ticks("h"); len(ts) != 3 || launched != 3 {
			t.Fatalf("before: %d ticks, %d backfills\n%s", len(ts), launched, tickSummary(ts))
		}
		last := t0.Add(3*time.Hour + 5*time.Minute)
		// Pruned, as the hourly pass would after the retention.
		if n, err := e.sched.Prune(context.Background(), last.Add(DefaultAutomationRetention+time.Hour)); err != nil || n != 3 {
			t.Fatalf("pruned %d, %v", n, err)
		}
		if ts := e.ticks("h"); len(ts) != 0 {
			t.Fatalf("ticks left: %s", tickSummary(ts))
		}
		e.restart(Options{})
		e.eval(last)
		e.eval(last.Add(30 * time.Minute))
		if ts, bs := e.ticks("h"), e.backfills(); len(ts) != 0 || len(bs) != launched {
			t.Fatalf("after prune and restart: %d ticks, %d backfills (want 0 and %d)\n%s", len(ts), len(bs), launched, tickSummary(ts))
		}
		e.eval(last.Add(time.Hour)) // 14:05
		ts := e.ticks("h")
		if len(ts) != 1 || ts[0].Outcome != db.TickLaunched || ts[0].ScheduledFor != db.Millis(at(t, "2026-03-01 14:05:00")) || len(e.backfills()) != launched+1 {
			t.Fatalf("the next tick: %d backfills\n%s", len(e.backfills()), tickSummary(ts))
		}
		st, _ := e.store.ScheduleStateOf(context.Background(), "h")
		if st.PrunedTicks != 3 || st.TicksLaunched != 4 {
			t.Fatalf("counts: pruned %d, launched %d", st.PrunedTicks, st.TicksLaunched)
		}
	})
}

// TestPruneFollowsTheRetention: the engine's retention decides what is
// pruned: a tick evaluated 2 days ago stays with the default (90 days)
// and goes with a retention of 36h.
func TestPruneFollowsTheRetention(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  h:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n", func(t *testing.T, e *schedEnv) {
		t0 := at(t, "2026-03-01 10:00:00")
		e.eval(t0)
		e.eval(t0.Add(65 * time.Minute)) // 10:05 missed, 11:05 launched
		n0 := len(e.ticks("h"))
		now := t0.Add(48 * time.Hour)
		if n, err := e.sched.Prune(context.Background(), now); err != nil || n != 0 {
			t.Fatalf("default retention pruned %d, %v", n, err)
		}
		e.restart(Options{AutomationRetention: 36 * time.Hour})
		if e.eng.AutomationRetention() != 36*time.Hour {
			t.Fatalf("retention %s", e.eng.AutomationRetention())
		}
		if n, err := e.sched.Prune(context.Background(), now); err != nil || n != int64(n0) || n0 == 0 {
			t.Fatalf("36h retention pruned %d, %v", n, err)
		}
	})
}

// TestPushDedupeAfterPrune: an event pruned after the retention still
// answers as a duplicate (its first outcome, replayed) and launches
// nothing, also after a restart; a run key used before its evaluation was
// pruned still launches nothing.
func TestPushDedupeAfterPrune(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, "  arrivals:\n    assets: [ref.regions]\n"+pollSensor("same", counterEvaluator("always"), ""), func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		r, err := e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-1", Partitions: []string{"eu"}}, "bot")
		if err != nil || r.Replayed {
			t.Fatalf("first push: %+v %v", r, err)
		}
		if ev, err := e.sensors.Evaluate(ctx, "same", false, "alice"); err != nil || ev.Outcomes[0].Backfill == "" {
			t.Fatalf("first evaluation: %+v %v", ev, err)
		}
		p, err := e.sensors.Prune(ctx, time.Now().Add(DefaultAutomationRetention+time.Hour))
		if err != nil || p.Events != 1 || p.Evaluations != 1 {
			t.Fatalf("pruned %+v, %v", p, err)
		}
		if n := e.count(`SELECT COUNT(*) FROM sensor_events`); n != 0 {
			t.Fatalf("%d events left", n)
		}
		for _, restart := range []bool{false, true} {
			if restart {
				e.restart(Options{})
				e.sensors = NewSensors(e.eng, slog.New(slog.NewTextHandler(io.Discard, nil)))
			}
			// Another body, as a retry that changed would: still the first outcome.
			r2, err := e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-1", Partitions: []string{"us"}}, "bot")
			if err != nil || !r2.Replayed || !r2.Event.Pruned || r2.Event.BackfillID == nil || *r2.Event.BackfillID != *r.Event.BackfillID {
				t.Fatalf("restart %v: pruned message id again: %+v %v", restart, r2, err)
			}
			ev, err := e.sensors.Evaluate(ctx, "same", false, "alice")
			if err != nil || ev.Outcomes[0].Backfill != "" || ev.Outcomes[0].Skipped == "" {
				t.Fatalf("restart %v: used run key after its evaluation was pruned: %+v %v", restart, ev, err)
			}
			if n := e.count(`SELECT COUNT(*) FROM backfills`); n != 2 {
				t.Fatalf("restart %v: %d backfills, want 2", restart, n)
			}
		}
		st, _ := e.store.SensorStateOf(ctx, "arrivals")
		if st.PrunedEvents != 1 || st.EventsAccepted != 1 || st.Launches != 1 {
			t.Fatalf("push state %+v", st)
		}
	})
}
