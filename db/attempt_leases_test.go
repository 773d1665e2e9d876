package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// startRowless starts attempt 1 of run_a on t.hourly's partitions idx, none
// of which has a status row, and returns its start (Unix ms).
func startRowless(t *testing.T, f fixture, idx ...int64) int64 {
	t.Helper()
	asset := f.ids["t.hourly"]
	if _, err := f.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
		VALUES ('run_a','key:a','bf_test',0,0,'t.hourly',?,'f',?,'queued',3,0,0)`, asset, len(idx)); err != nil {
		t.Fatal(err)
	}
	at := db.Millis(f.now)
	st := db.AttemptStart{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2"}
	for _, i := range idx {
		st.Parts = append(st.Parts, db.PartRef{Key: f.sp.Key(i), Idx: i})
	}
	emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{st}}, f.now)
	return at
}

func statusRows(t *testing.T, s *db.Store, assetID int64) int {
	t.Helper()
	var n int
	if err := s.RawReader().Get(&n, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, assetID); err != nil {
		t.Fatal(err)
	}
	return n
}

// A report of a partition leased without a status row writes the
// in-progress row the lease stands for, then records the report over it as
// over any leased row: the partition stays in progress under the attempt's
// lease, and the attempt's own result applies over the report when it
// ends. The partitions not reported get their row only then.
func TestReportDuringALeaseWithoutRow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	asset := f.ids["t.hourly"]
	at := startRowless(t, f, 3, 4, 5)
	if n := statusRows(t, f.store, asset); n != 0 {
		t.Fatalf("%d status rows at the attempt's start, want none", n)
	}
	checkRollup(t, f.store)
	id := db.AttemptInstanceIDs("run_a", 1, "t.hourly")
	if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(4, db.StatusMaterialized, "ext", f.now.Add(time.Second))}, "test", "", f.now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Status  string  `db:"status"`
		Lease   *string `db:"lease_instance_id"`
		LeaseBy *string `db:"lease_run_id"`
		MatRun  *string `db:"last_mat_run_id"`
		Updated int64   `db:"updated_at"`
	}
	if err := f.store.RawReader().Get(&row, `SELECT status, lease_instance_id, lease_run_id, last_mat_run_id, updated_at FROM partition_status WHERE asset_id=? AND idx=4`, asset); err != nil {
		t.Fatalf("no row for the reported partition: %v", err)
	}
	if row.Status != db.StatusInProgress || row.Lease == nil || *row.Lease != id(f.sp.Key(4)) || row.LeaseBy == nil || *row.LeaseBy != "run_a" || row.MatRun == nil || *row.MatRun != "ext" {
		t.Fatalf("reported partition's row %+v, want in progress under run_a's lease, materialized by the report", row)
	}
	if n := statusRows(t, f.store, asset); n != 1 {
		t.Fatalf("%d status rows after the report, want only the reported partition's", n)
	}
	rows := leaseRows(t, f.store, asset)
	for _, i := range []int64{3, 4, 5} {
		if r := rows[f.sp.Key(i)]; r.Status != db.StatusInProgress || r.Lease == nil || *r.Lease != id(f.sp.Key(i)) {
			t.Fatalf("partition %d as read during the lease: %+v", i, r)
		}
	}
	if hs, err := f.store.LeaseHolders(ctx, asset, []string{f.sp.Key(3), f.sp.Key(4), f.sp.Key(5)}, "other"); err != nil || len(hs) != 3 {
		t.Fatalf("lease holders %+v %v, want run_a on all three", hs, err)
	}
	checkRollup(t, f.store)

	end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptSucceeded,
		RunState: db.RunSucceeded, CodeVersion: "v2", Started: at}
	for _, i := range []int64{3, 4, 5} {
		end.Parts = append(end.Parts, db.PartRef{Key: f.sp.Key(i), Idx: i, Status: db.StatusMaterialized})
	}
	later := f.now.Add(2 * time.Second)
	emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
	rows = leaseRows(t, f.store, asset)
	for _, i := range []int64{3, 4, 5} {
		if r := rows[f.sp.Key(i)]; r.Status != db.StatusMaterialized || r.Lease != nil || r.Mat == nil || *r.Mat != id(f.sp.Key(i)) || *r.Run != "run_a" {
			t.Fatalf("partition %d after the attempt: %+v, want materialized by run_a", i, r)
		}
	}
	checkRollup(t, f.store)
}

// An attempt that fails some partitions leased without a row, and
// materializes others with metadata, writes each row once with its result;
// the leases of a re-indexed asset follow its new key space.
func TestLeaseWithoutRowFailuresAndReindex(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	asset := f.ids["t.hourly"]
	at := startRowless(t, f, 48, 49, 50)
	// The scheme now starts a day later: partition 48 becomes index 24.
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(`
assets:
  t.hourly:
    partitions: {hourly: {start: "2025-01-02-00:00"}}
    code_version: v2
    executor: {demo: {duration: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.SyncWorkspace(ctx, ws, "test", f.now); err != nil {
		t.Fatal(err)
	}
	rows, err := f.store.StatusRange(ctx, asset, 0, 100)
	if err != nil || len(rows) != 3 || rows[0].Idx != 24 || rows[2].Idx != 26 || rows[0].Status != db.StatusInProgress {
		t.Fatalf("leases after the re-index %+v %v, want indexes 24 to 26 in progress", rows, err)
	}
	checkRollup(t, f.store)
	end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptFailed,
		RunState: db.RunFailed, CodeVersion: "v2", Started: at, Error: "some failed", Parts: []db.PartRef{
			{Key: f.sp.Key(48), Idx: 48, Status: db.StatusFailed, Error: "boom"},
			{Key: f.sp.Key(49), Idx: 49, Status: db.StatusMaterialized, Metadata: []byte(`{"rows":3}`)},
			{Key: f.sp.Key(50), Idx: 50, Status: db.StatusMaterialized},
		}}
	later := f.now.Add(time.Second)
	emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
	id := db.AttemptInstanceIDs("run_a", 1, "t.hourly")
	p, err := f.store.Partition(ctx, asset, f.sp.Key(48))
	if err != nil || p.Idx != 24 || p.Status != db.StatusFailed || p.LastAttemptError == nil || *p.LastAttemptError != "boom" ||
		p.LastAttemptInstanceID == nil || *p.LastAttemptInstanceID != id(f.sp.Key(48)) || p.LeaseInstanceID != nil {
		t.Fatalf("failed partition %+v %v", p, err)
	}
	p, err = f.store.Partition(ctx, asset, f.sp.Key(49))
	if err != nil || p.Idx != 25 || p.Status != db.StatusMaterialized || p.LastMatMetadata == nil || *p.LastMatMetadata != `{"rows":3}` ||
		p.LastMatInstanceID == nil || *p.LastMatInstanceID != id(f.sp.Key(49)) {
		t.Fatalf("materialized partition with metadata %+v %v", p, err)
	}
	p, err = f.store.Partition(ctx, asset, f.sp.Key(50))
	if err != nil || p.Idx != 26 || p.Status != db.StatusMaterialized || p.LastMatAt == nil || *p.LastMatAt != db.Millis(later) {
		t.Fatalf("materialized partition %+v %v", p, err)
	}
	checkRollup(t, f.store)
	if failed, err := f.store.LastAttemptFailed(ctx, asset); err != nil || !failed {
		t.Fatalf("asset's last attempt failed: %v %v", failed, err)
	}
}

// Migration 20 gives the attempts recorded before it their asset (which
// replaying their events gives them too), and no lease.
func TestMigrationAttemptAsset(t *testing.T) {
	s := storeFrom(t, 19,
		`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
			VALUES ('run_1','k1','bf',0,0,'t.a',7,'f',1,'succeeded',1,0,0)`,
		`INSERT INTO attempts (run_id, attempt, state, owner, partitions, started_at) VALUES ('run_1',1,'succeeded','o',1,5)`,
	)
	var got struct {
		Asset *int64  `db:"asset_id"`
		Lease *string `db:"lease"`
	}
	if err := s.RawReader().Get(&got, `SELECT asset_id, lease FROM attempts WHERE run_id='run_1'`); err != nil || got.Asset == nil || *got.Asset != 7 || got.Lease != nil {
		t.Fatalf("attempt after the migration: %+v %v, want asset 7 and no lease", got, err)
	}
}

// A re-index that turns leases without a row into rows marks the staleness
// blocks those rows land in, also a block that had no row before: the
// stored blocks stay those of the rows, and a full load of the asset's
// staleness facts finds the rows the rollup counts (no read of every row).
func TestReindexMarksTheBlocksOfLeasedRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	startRowless(t, f, 1030, 1031, 1032) // block 1
	// The scheme now starts two days later: 1030 becomes 982 (block 0).
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(`
assets:
  t.hourly:
    partitions: {hourly: {start: "2025-01-03-00:00"}}
    code_version: v2
    executor: {demo: {duration: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.SyncWorkspace(ctx, ws, "test", f.now); err != nil {
		t.Fatal(err)
	}
	rows, err := f.store.StatusRange(ctx, f.ids["t.hourly"], 0, 2000)
	if err != nil || len(rows) != 3 || rows[0].Idx != 982 || rows[0].Status != db.StatusInProgress {
		t.Fatalf("leases after the re-index %+v %v, want indexes 982 to 984 in progress", rows, err)
	}
	checkRollup(t, f.store)
	diffs, _, err := f.store.CheckStaleBlocks(ctx)
	if err != nil || len(diffs) > 0 {
		t.Fatalf("staleness blocks after the re-index: %v %v", diffs, err)
	}
	in := staleInputAt(ws, f.ids, f.now)
	fa, err := f.store.StaleFacts(ctx, in, ws.Asset("t.hourly"))
	if err != nil {
		t.Fatal(err)
	}
	if fa.Rows() != 3 || f.store.StaleMiscounted() != 0 {
		t.Fatalf("staleness facts after the re-index: %d rows (want 3), %d loads read every row", fa.Rows(), f.store.StaleMiscounted())
	}
}
