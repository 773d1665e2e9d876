package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestReplayRebuildsProjections runs a long mixed scenario (successes,
// failures, retries, upstream failures, pause, cancel, terminate, retry-failed,
// overlapping backfills) and rebuilds every projection from the events.
func TestReplayRebuildsProjections(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		var calls atomic.Int64
		ex := funcExec(func(ctx context.Context, w Work) Result {
			n := int(calls.Add(1))
			res := Result{Parts: map[string]PartResult{}}
			for i, p := range w.Partitions {
				if (len(p)+i+n)%7 == 0 {
					res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "x"}
					res.Err = errors.New("some failed")
				} else {
					res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized, Metadata: []byte(`{"rows":3}`)}
				}
			}
			return res
		})
		sw := newSwap(ex)
		env := newTestEnvOn(t, dialect, multiWS, Options{Executor: sw})
		env.start()
		ctx := context.Background()
		a := env.create(Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 5, MaxConcurrentRuns: 3})
		b := env.create(Request{Assets: []string{"feat"}, Selector: Selector{Type: "filter", Dimensions: map[string][]string{"region": {"eu", "us"}}}, ChunkSize: 3, MaxConcurrentRuns: 2})
		c := env.create(Request{Assets: []string{"up.hourly"}, Selector: Selector{Type: "explicit", Keys: []string{"2025-01-01-01:00", "2025-01-02-03:00"}}, ChunkSize: 1, MaxConcurrentRuns: 2})
		for _, id := range []string{a.ID, b.ID, c.ID} {
			env.wait(id, db.BackfillSucceeded, db.BackfillFailed)
		}
		if r, err := env.eng.RetryFailed(ctx, a.ID, RetryOptions{RequestID: "again"}, "t"); err == nil {
			env.wait(r.Backfill.ID, db.BackfillSucceeded, db.BackfillFailed)
		}
		g := newGate()
		sw.set(g)
		d := env.create(Request{Assets: []string{"feat"}, Selector: Selector{Type: "range"}, ChunkSize: 2, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "gate", func() bool { return g.started.Load() >= 2 })
		if _, err := env.eng.Transition(ctx, d.ID, ActPause, 0, false, "t"); err != nil {
			t.Fatal(err)
		}
		if _, err := env.eng.Transition(ctx, d.ID, ActResume, 0, false, "t"); err != nil {
			t.Fatal(err)
		}
		if _, err := env.eng.Transition(ctx, d.ID, ActCancel, 0, true, "t"); err != nil {
			t.Fatal(err)
		}
		env.wait(d.ID, db.BackfillCanceled)
		env.stop()

		teststore.ReplayEquals(t, env.store)
		// Attempt events carry no instance id per partition: applying one
		// derives the ids from its attempt, and they are the ids the engine
		// and the run pages use.
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM events WHERE type IN ('attempts.started', 'attempts.finished') AND payload LIKE '%"id":"pi_%'`); n != 0 {
			t.Errorf("%d attempt events carry instance ids", n)
		}
		var insts []struct {
			ID       string `db:"id"`
			Key      string `db:"partition_key"`
			Run      string `db:"run_id"`
			Asset    string `db:"asset"`
			Attempts int64  `db:"attempts"`
		}
		if err := env.store.RawReader().SelectContext(ctx, &insts, `SELECT i.id, i.partition_key, i.run_id, r.asset, r.attempts FROM partition_instances_all i JOIN runs r ON r.id = i.run_id`); err != nil {
			t.Fatal(err)
		}
		for _, in := range insts {
			found := false
			for n := int64(1); n <= in.Attempts && !found; n++ {
				found = db.AttemptInstanceIDs(in.Run, n, in.Asset)(in.Key) == in.ID
			}
			if !found {
				t.Errorf("instance %s of %s %s is no attempt's derived id", in.ID, in.Run, in.Key)
			}
		}
		if len(insts) < 50 {
			t.Fatalf("only %d backfill instances", len(insts))
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM attempts`); n < 20 {
			t.Fatalf("scenario too small: %d attempts", n)
		}
	})
}
