package jobs

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
)

// TestMissingWithinTickSkipsLeasedPartitions: a missing_within tick targets
// the missing and failed windows; two of them that a running attempt leases
// without a status row are in progress, not missing, so the tick's backfill
// leaves them out (as it would a partition whose row holds the lease).
func TestMissingWithinTickSkipsLeasedPartitions(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "  recent:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n    missing_within: 6h\n")
	ctx := context.Background()
	sc := e.ws.Load().Schedule("recent")
	tick := at(t, "2026-03-01 10:05:00")
	req, skip, err := e.eng.TickRequest(ctx, sc, tick)
	if err != nil || skip != "" {
		t.Fatal(err, skip)
	}
	before, err := e.eng.PreviewAt(ctx, req, tick)
	if err != nil || before.TotalPartitions < 3 || before.Status[db.StatusMissing] != before.TotalPartitions {
		t.Fatalf("preview before the lease: %v %+v, want only missing partitions", err, before)
	}
	sp := e.ws.Load().Asset("raw.events").Scheme.Space(tick, nil)
	lo, err := sp.Index(req.Selector.Start)
	if err != nil {
		t.Fatal(err)
	}
	asset := e.ids["raw.events"]
	if _, err := e.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
		VALUES ('run_a','key:a','bf_other',0,0,'raw.events',?,'f',2,'queued',3,0,0)`, asset); err != nil {
		t.Fatal(err)
	}
	start := db.AttemptsStarted{Owner: "o", At: db.Millis(tick), Attempts: []db.AttemptStart{{RunID: "run_a", BackfillID: "bf_other", Attempt: 1,
		AssetID: asset, Asset: "raw.events", Parts: []db.PartRef{{Key: sp.Key(lo), Idx: lo}, {Key: sp.Key(lo + 1), Idx: lo + 1}}}}}
	if err := e.store.Tx(ctx, func(tx *sqlx.Tx) error {
		return db.Emit(ctx, tx, db.EvAttemptsStarted, "backfill:bf_other", "controller", start, "", tick)
	}); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := e.store.RawReader().Get(&rows, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, asset); err != nil || rows != 0 {
		t.Fatalf("%d status rows (%v), want none: the attempt's own row holds the lease", rows, err)
	}
	after, err := e.eng.PreviewAt(ctx, req, tick)
	if err != nil || after.TotalPartitions != before.TotalPartitions-2 || after.Status[db.StatusMissing] != before.TotalPartitions-2 {
		t.Fatalf("preview during the lease: %v %+v, want the %d missing partitions but the 2 leased", err, after, before.TotalPartitions-2)
	}
}
