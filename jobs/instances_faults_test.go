package jobs

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
)

// TestPostgresRestartMidBackfill: PostgreSQL restarts (pg_ctl restart)
// while instance A runs a backfill that instance B follows: A's engine
// reconnects and completes the backfill with every partition built, and
// B's live pages are signalled again after the restart. The cluster is
// the test's own (the package's is shared by its tests).
func TestPostgresRestartMidBackfill(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	url := k.URL(t)
	store, err := db.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(sleepyWS))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.SyncWorkspace(ctx, ws, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := &testEnv{t: t, store: store, ws: ws, ids: ids}
	a.eng, err = NewEngine(ctx, store, func() (*catalog.Workspace, map[string]int64) { return ws, ids }, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := a.secondInstance("", Options{})
	a.links()
	b.links()
	probe := counter(t, b.eng.Broker(), "bf_probe")
	poll.Eventually(t, 10*time.Second, "A's publication to reach B", func() bool {
		a.eng.Broker().Publish("bf_probe")
		return probe.Load() > 0
	})
	a.start()
	const n = 40
	bf := a.create(Request{Assets: []string{"s.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-02-09"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	onB := counter(t, b.eng.Broker(), bf.ID)
	count := func(q string, args ...any) int64 {
		var c int64
		if err := store.RawReader().Get(&c, q, args...); err != nil {
			return -1
		}
		return c
	}
	poll.Eventually(t, 20*time.Second, "some runs to succeed before the restart", func() bool {
		return count(`SELECT COUNT(*) FROM runs WHERE backfill_id=? AND state='succeeded'`, bf.ID) >= 5
	})
	if done := count(`SELECT COUNT(*) FROM runs WHERE backfill_id=? AND state='succeeded'`, bf.ID); done >= n {
		t.Fatalf("the backfill ended before the restart (%d runs): make it longer", done)
	}
	k.Restart(t)
	restarted := onB.Load()
	// (Reads do not fail for the restart: a connection ended by it is
	// replaced.)
	got := a.wait(bf.ID, db.BackfillSucceeded, db.BackfillFailed)
	if got.State != db.BackfillSucceeded {
		t.Fatalf("backfill %s after the restart: %+v", got.State, got)
	}
	if m := count(`SELECT COUNT(*) FROM partition_status WHERE asset_id=? AND status='materialized'`, ids["s.daily"]); m != n {
		t.Fatalf("%d partitions materialized, want %d", m, n)
	}
	if r := count(`SELECT COUNT(*) FROM runs WHERE backfill_id=?`, bf.ID); r != n {
		t.Fatalf("%d runs, want %d (none planned twice)", r, n)
	}
	poll.Eventually(t, 10*time.Second, "B to be signalled for the backfill after the restart", func() bool { return onB.Load() > restarted })
	// And B listens again (not only polls): a publication reaches it.
	before := probe.Load()
	poll.Eventually(t, 15*time.Second, "B to listen again after the restart", func() bool {
		a.eng.Broker().Publish("bf_probe")
		return probe.Load() > before
	})
}
