package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

var pruneT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recordTicks records n ticks of schedule, one an hour from start, each
// evaluated at its time.
func recordTicks(t *testing.T, store *db.Store, schedule string, start time.Time, n int, outcome string) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Hour)
		tk := db.Tick{ID: fmt.Sprintf("%s:%d", schedule, at.Unix()), Schedule: schedule, ScheduledFor: db.Millis(at), EvaluatedAt: db.Millis(at),
			Outcome: outcome, DefinitionHash: "h", Actor: "scheduler"}
		if _, err := store.RecordTick(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
}

// ensureStates creates the state of each of names as of pruneT0 (ensure:
// EnsureScheduleState or EnsureSensorState).
func ensureStates[S any](t *testing.T, ensure func(context.Context, string, int64) (S, error), names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := ensure(t.Context(), name, db.Millis(pruneT0)); err != nil {
			t.Fatal(err)
		}
	}
}

func countTicks(t *testing.T, store *db.Store, schedule string) int {
	t.Helper()
	ts, err := store.ScheduleTicks(t.Context(), schedule, nil, nil, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestPruneTicksBatchedAndCounted: the ticks evaluated before the cutoff
// go, in batches (250 ticks in batches of 100: 3 transactions), each
// schedule counting its own; queued ticks and newer ticks stay, and the
// schedule's last tick (what the scheduler goes on from) does not move.
func TestPruneTicksBatchedAndCounted(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		ensureStates(t, store.EnsureScheduleState, "a", "b")
		recordTicks(t, store, "a", pruneT0, 250, db.TickLaunched)                 // old
		recordTicks(t, store, "a", pruneT0.Add(400*time.Hour), 5, db.TickSkipped) // new
		recordTicks(t, store, "b", pruneT0.Add(-10*time.Hour), 7, db.TickFailed)  // old
		recordTicks(t, store, "b", pruneT0.Add(-100*time.Hour), 1, db.TickQueued) // old but queued
		before, _ := store.ScheduleStateOf(ctx, "a")
		cutoff := db.Millis(pruneT0.Add(300 * time.Hour))

		n, err := store.PruneTicks(ctx, cutoff, 100)
		if err != nil || n != 257 {
			t.Fatalf("pruned %d, %v; want 257", n, err)
		}
		a, _ := store.ScheduleStateOf(ctx, "a")
		b, _ := store.ScheduleStateOf(ctx, "b")
		if a.PrunedTicks != 250 || b.PrunedTicks != 7 {
			t.Fatalf("pruned counts a=%d b=%d, want 250 and 7", a.PrunedTicks, b.PrunedTicks)
		}
		if countTicks(t, store, "a") != 5 || countTicks(t, store, "b") != 1 {
			t.Fatalf("left: a %d, b %d; want the 5 new ticks and the queued one", countTicks(t, store, "a"), countTicks(t, store, "b"))
		}
		if a.LastTickAt != before.LastTickAt || a.TicksLaunched != before.TicksLaunched {
			t.Fatalf("state moved: last tick %d → %d, launched %d → %d", before.LastTickAt, a.LastTickAt, before.TicksLaunched, a.TicksLaunched)
		}
		// Again: nothing left to prune, the counts stay.
		if n, err := store.PruneTicks(ctx, cutoff, 100); err != nil || n != 0 {
			t.Fatalf("second prune %d, %v", n, err)
		}
		if a, _ := store.ScheduleStateOf(ctx, "a"); a.PrunedTicks != 250 {
			t.Fatalf("count after a second prune: %d", a.PrunedTicks)
		}
	})
}

// TestPruneSensorHistoryKeepsDedupeAndRunKeys: old evaluations and events
// go (counted per sensor); a pruned event's message id still answers its
// first outcome, as pruned, and recording it again is a duplicate; run
// keys are never pruned.
func TestPruneSensorHistoryKeepsDedupeAndRunKeys(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		ensureStates(t, store.EnsureSensorState, "poll", "push")
		for i := range 30 {
			at := pruneT0.Add(time.Duration(i) * time.Hour)
			if i >= 25 {
				at = at.Add(1000 * time.Hour) // the 5 newest are kept
			}
			if _, err := store.RecordDryRun(ctx, db.SensorEvaluation{Sensor: "poll", Kind: db.EvalDryRun, StartedAt: db.Millis(at), Requests: "[]", Actor: "t"}); err != nil {
				t.Fatal(err)
			}
		}
		bf := "bf_1"
		for i := range 12 {
			at := pruneT0.Add(time.Duration(i) * time.Hour)
			if i >= 10 {
				at = at.Add(1000 * time.Hour)
			}
			err := store.Tx(ctx, func(tx *db.Tx) error {
				_, _, err := db.RecordSensorEventTx(ctx, tx, db.SensorEvent{Sensor: "push", MessageID: fmt.Sprintf("m%02d", i), ReceivedAt: db.Millis(at),
					Outcome: db.EventLaunched, BackfillID: &bf, Actor: "etl"})
				if err != nil {
					return err
				}
				return db.RecordRunKeyTx(ctx, tx, db.SensorRunKey{Sensor: "poll", RunKey: fmt.Sprintf("k%02d", i), BackfillID: bf, CreatedAt: db.Millis(at)})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		p, err := store.PruneSensorHistory(ctx, db.Millis(pruneT0.Add(500*time.Hour)), 4)
		if err != nil || p.Evaluations != 25 || p.Events != 10 {
			t.Fatalf("pruned %+v, %v; want 25 evaluations and 10 events", p, err)
		}
		poll, _ := store.SensorStateOf(ctx, "poll")
		push, _ := store.SensorStateOf(ctx, "push")
		if poll.PrunedEvaluations != 25 || push.PrunedEvents != 10 || poll.PrunedEvents != 0 || push.PrunedEvaluations != 0 {
			t.Fatalf("counts: poll %+v, push %+v", poll, push)
		}
		if evs, _ := store.SensorEvaluations(ctx, "poll", 0, 100); len(evs) != 5 {
			t.Fatalf("%d evaluations left, want 5", len(evs))
		}
		if evs, _ := store.SensorEvents(ctx, "push", nil, 100); len(evs) != 2 {
			t.Fatalf("%d events listed, want the 2 newest", len(evs))
		}
		// The pruned message id still answers its first outcome.
		first, err := store.SensorEventOf(ctx, "push", "m03")
		if err != nil || !first.Pruned || first.Outcome != db.EventLaunched || first.BackfillID == nil || *first.BackfillID != bf || first.ReceivedAt != db.Millis(pruneT0.Add(3*time.Hour)) {
			t.Fatalf("pruned event: %+v, %v", first, err)
		}
		if kept, err := store.SensorEventOf(ctx, "push", "m11"); err != nil || kept.Pruned || kept.Actor != "etl" {
			t.Fatalf("kept event: %+v, %v", kept, err)
		}
		var isFirst bool
		other := "bf_2"
		if err := store.Tx(ctx, func(tx *db.Tx) error {
			var err error
			_, isFirst, err = db.RecordSensorEventTx(ctx, tx, db.SensorEvent{Sensor: "push", MessageID: "m03", ReceivedAt: db.Millis(pruneT0.Add(2000 * time.Hour)),
				Outcome: db.EventLaunched, BackfillID: &other, Actor: "etl"})
			return err
		}); err != nil || isFirst {
			t.Fatalf("recording a pruned message id again: first=%v, %v", isFirst, err)
		}
		if st, _ := store.SensorStateOf(ctx, "push"); st.EventsAccepted != 12 {
			t.Fatalf("events accepted %d after a duplicate, want 12", st.EventsAccepted)
		}
		if keys, _ := store.SensorRunKeys(ctx, "poll", "", "", 100); len(keys) != 12 {
			t.Fatalf("%d run keys left, want all 12", len(keys))
		}
	})
}

// TestRecentTicksOneQuery: the newest ticks of every schedule, in one
// query however many schedules there are.
func TestRecentTicksOneQuery(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		var names []string
		for i := range 50 {
			name := fmt.Sprintf("s%02d", i)
			names = append(names, name)
			ensureStates(t, store.EnsureScheduleState, name)
			recordTicks(t, store, name, pruneT0, i%4, db.TickLaunched) // 0 to 3 ticks each
		}
		ctx, reads := db.CountReads(t.Context())
		got, err := store.RecentTicks(ctx, names, 2)
		if err != nil || reads.N() != 1 {
			t.Fatalf("%d queries, %v", reads.N(), err)
		}
		for i, name := range names {
			want := min(i%4, 2)
			if len(got[name]) != want {
				t.Fatalf("%s: %d ticks, want %d", name, len(got[name]), want)
			}
			if want == 2 && got[name][0].ScheduledFor <= got[name][1].ScheduledFor {
				t.Fatalf("%s: not newest first", name)
			}
		}
	})
}
