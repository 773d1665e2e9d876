package db_test

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// queueRun inserts the queued chunk run (run key "key:"+run) of chunk of
// backfill bf_test over partitions of t.hourly, up to 3 attempts.
func queueRun(t *testing.T, f fixture, run string, chunk, partitions int) {
	t.Helper()
	if _, err := f.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
		VALUES (?,?,'bf_test',?,0,'t.hourly',?,'f',?,'queued',3,0,0)`, run, "key:"+run, chunk, f.ids["t.hourly"], partitions); err != nil {
		t.Fatal(err)
	}
}

// startRowless starts attempt 1 of run_a on t.hourly's partitions idx, none
// of which has a status row, and returns its start (Unix ms).
func startRowless(t *testing.T, f fixture, idx ...int64) int64 {
	t.Helper()
	asset := f.ids["t.hourly"]
	queueRun(t, f, "run_a", 0, len(idx))
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
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
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
	})
}

// An attempt that fails some partitions leased without a row, and
// materializes others with metadata, writes each row once with its result;
// the leases of a re-indexed asset follow its new key space.
func TestLeaseWithoutRowFailuresAndReindex(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		at := startRowless(t, f, 48, 49, 50)
		// The scheme now starts a day later: partition 48 becomes index 24.
		reindexHourly(t, f, "2025-01-02-00:00")
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
	})
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
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		startRowless(t, f, 1030, 1031, 1032) // block 1
		// The scheme now starts two days later: 1030 becomes 982 (block 0).
		ws := reindexHourly(t, f, "2025-01-03-00:00")
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
	})
}

// emit applies one engine event in its own transaction.
func emit(t *testing.T, s *db.Store, typ string, payload any, now time.Time) {
	t.Helper()
	if err := s.Tx(t.Context(), func(tx *sqlx.Tx) error {
		return db.Emit(t.Context(), tx, typ, "backfill:bf_test", "controller", payload, "", now)
	}); err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
}

type leaseRow struct {
	Key    string  `db:"partition_key"`
	Status string  `db:"status"`
	Lease  *string `db:"lease_instance_id"`
	Mat    *string `db:"last_mat_instance_id"`
	Run    *string `db:"last_mat_run_id"`
}

// leaseRows reads an asset's partitions as every reader sees them: the
// status rows, and the partitions running attempts lease without a row as
// the in-progress rows they stand for.
func leaseRows(t *testing.T, s *db.Store, assetID int64) map[string]leaseRow {
	t.Helper()
	rows, err := s.StatusRange(t.Context(), assetID, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]leaseRow{}
	for _, r := range rows {
		out[r.Key] = leaseRow{Key: r.Key, Status: r.Status, Lease: r.LeaseInstanceID, Mat: r.LastMatInstanceID, Run: r.LastMatRunID}
	}
	return out
}

// An attempt's in-progress rows hold its instance as their lease; its
// finish records each row's own instance from that lease, one statement per
// attempt. Two attempts of one asset in one event, the first only
// rebuilding partitions that have a row, the second only new ones, start
// without a duplicate row (the new rows were once inserted twice: "UNIQUE
// constraint failed"). A partition reported by an external pipeline while
// the attempt builds it records the report but stays in progress under the
// attempt's lease until the attempt's own result is applied over it, and
// the rollup stays equal to the rows.
func TestAttemptLeaseInstance(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		t0 := f.now.Add(-time.Hour)
		// Partitions 0 and 1 were materialized before: rows with a status.
		if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(0, db.StatusMaterialized, "old", t0), f.mat(1, db.StatusMaterialized, "old", t0)}, "test", "", f.now); err != nil {
			t.Fatal(err)
		}
		for i, run := range []string{"run_a", "run_b"} {
			queueRun(t, f, run, i, 2+i)
		}
		part := func(i int64, prev string) db.PartRef { return db.PartRef{Key: f.sp.Key(i), Idx: i, Prev: prev} }
		at := db.Millis(f.now)
		started := db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2",
				Parts: []db.PartRef{part(0, db.StatusMaterialized), part(1, db.StatusMaterialized)}},
			{RunID: "run_b", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2",
				Parts: []db.PartRef{part(2, ""), part(3, ""), part(4, "")}},
		}}
		emit(t, f.store, db.EvAttemptsStarted, started, f.now)
		idA := db.AttemptInstanceIDs("run_a", 1, "t.hourly")
		idB := db.AttemptInstanceIDs("run_b", 1, "t.hourly")
		rows := leaseRows(t, f.store, asset)
		for i, want := range map[int64]string{0: idA(f.sp.Key(0)), 1: idA(f.sp.Key(1)), 2: idB(f.sp.Key(2)), 3: idB(f.sp.Key(3)), 4: idB(f.sp.Key(4))} {
			r := rows[f.sp.Key(i)]
			if r.Status != db.StatusInProgress || r.Lease == nil || *r.Lease != want {
				t.Fatalf("partition %d after the start: %+v, want in progress with lease %s", i, r, want)
			}
		}
		checkRollup(t, f.store)

		// An external report materializes partition 3 while run_b builds it.
		if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(3, db.StatusMaterialized, "ext", f.now.Add(time.Second))}, "test", "", f.now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// It is recorded, but the partition stays in progress under run_b's
		// lease: no other run may build it meanwhile.
		if r := leaseRows(t, f.store, asset)[f.sp.Key(3)]; r.Status != db.StatusInProgress || r.Lease == nil || *r.Lease != idB(f.sp.Key(3)) ||
			r.Mat == nil || *r.Run != "ext" {
			t.Fatalf("after a report during the lease: %+v, want in progress under run_b's lease, materialized by the report", r)
		}
		checkRollup(t, f.store)

		fin := func(run string, idx ...int64) db.AttemptEnd {
			e := db.AttemptEnd{RunID: run, BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptSucceeded,
				RunState: db.RunSucceeded, CodeVersion: "v2", Started: at}
			for _, i := range idx {
				p := part(i, "")
				p.Status = db.StatusMaterialized
				e.Parts = append(e.Parts, p)
			}
			return e
		}
		later := f.now.Add(2 * time.Second)
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{fin("run_a", 0, 1), fin("run_b", 2, 3, 4)}}, later)
		rows = leaseRows(t, f.store, asset)
		for i := int64(0); i < 5; i++ {
			r := rows[f.sp.Key(i)]
			run, id := "run_a", idA(f.sp.Key(i))
			if i >= 2 {
				run, id = "run_b", idB(f.sp.Key(i))
			}
			if r.Status != db.StatusMaterialized || r.Lease != nil || r.Mat == nil || *r.Mat != id || r.Run == nil || *r.Run != run {
				t.Fatalf("partition %d after the finish: %+v, want materialized by %s (%s), no lease", i, r, run, id)
			}
		}
		var open int
		if err := f.store.RawReader().Get(&open, `SELECT COUNT(*) FROM partition_instances WHERE status='in_progress'`); err != nil || open != 0 {
			t.Fatalf("%d instances still in progress (%v)", open, err)
		}
		checkRollup(t, f.store)
	})
}

// Migration 10 gives the in-progress rows of a database from before it the
// lease of their in-progress instance (the newest one), and no other row a
// lease.
func TestMigrationLeaseInstance(t *testing.T) {
	s := storeFrom(t, 9,
		`INSERT INTO assets (id, key, scheme_kind, scheme_description, scheme_signature, definition, created_at, updated_at) VALUES (1,'t.a','static','x','x','{}',0,0)`,
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, updated_at) VALUES (1,'a',0,'in_progress',0,5)`,
		`INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, created_at) VALUES ('pi_old',1,'a','run_1','failed',1)`,
		`INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, created_at) VALUES ('pi_now',1,'a','run_1','in_progress',5)`,
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, last_mat_instance_id, last_mat_run_id, last_mat_at, updated_at)
			VALUES (1,'b',1,'materialized',1,'pi_b','run_b',5,5)`,
		`INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, created_at) VALUES ('pi_b',1,'b','run_b','materialized',5)`,
	)
	rows := leaseRows(t, s, 1)
	if r := rows["a"]; r.Lease == nil || *r.Lease != "pi_now" {
		t.Fatalf("in-progress row after migration: %+v, want lease pi_now", r)
	}
	if r := rows["b"]; r.Lease != nil {
		t.Fatalf("materialized row got a lease: %+v", r)
	}
}

// storeFrom opens a database built up to schema version, with rows written
// by stmts at that version, through db.Open (which applies the migrations
// after it).
func storeFrom(t *testing.T, version int64, stmts ...string) *db.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	d, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateTo(d, version); err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := d.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	return teststore.OpenAt(t, path)
}

// A report that arrives while an attempt builds the partition does not end
// the attempt's lease (another run would build the partition beside it);
// if the attempt then ends without a result of its own (canceled,
// interrupted), the partition takes what was reported: materialized or
// failed, not its status from before the attempt (for a partition never
// built before, its row was deleted, and the report with it).
func TestReportDuringLeaseOutlivesCanceledAttempt(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		queueRun(t, f, "run_a", 0, 3)
		part := func(i int64) db.PartRef { return db.PartRef{Key: f.sp.Key(i), Idx: i} }
		at := db.Millis(f.now)
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2", Parts: []db.PartRef{part(0), part(1), part(2)}},
		}}, f.now)
		// Partition 0 is reported materialized and 1 failed while run_a builds them; 2 is not reported.
		reportAt := f.now.Add(time.Second)
		if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(0, db.StatusMaterialized, "ext", reportAt), f.mat(1, db.StatusFailed, "ext", reportAt)}, "test", "", reportAt); err != nil {
			t.Fatal(err)
		}
		rows := leaseRows(t, f.store, asset)
		for i := int64(0); i < 3; i++ {
			if r := rows[f.sp.Key(i)]; r.Status != db.StatusInProgress || r.Lease == nil {
				t.Fatalf("partition %d after a report during the lease: %+v, want still in progress and leased", i, r)
			}
		}
		checkRollup(t, f.store)
		end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptCanceled,
			RunState: db.RunCanceled, CodeVersion: "v2", Started: at, Parts: []db.PartRef{part(0), part(1), part(2)}}
		for i := range end.Parts {
			end.Parts[i].Status = db.AttemptCanceled
		}
		later := f.now.Add(2 * time.Second)
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
		rows = leaseRows(t, f.store, asset)
		if r := rows[f.sp.Key(0)]; r.Status != db.StatusMaterialized || r.Lease != nil || r.Run == nil || *r.Run != "ext" {
			t.Errorf("partition 0 after the canceled attempt: %+v, want materialized by the report, no lease", r)
		}
		if r := rows[f.sp.Key(1)]; r.Status != db.StatusFailed || r.Lease != nil {
			t.Errorf("partition 1 after the canceled attempt: %+v, want failed as reported, no lease", r)
		}
		if r, ok := rows[f.sp.Key(2)]; ok {
			t.Errorf("partition 2, never built nor reported: %+v, want no row again", r)
		}
		checkRollup(t, f.store)
	})
}

// A report naming the run that builds the partition (a command calling
// tessera report --run-id $TESSERA_RUN_ID) is an instance of its own beside
// the attempt's, which is recorded when the attempt ends under the id the
// report would have taken: after the attempt is canceled the partition is
// materialized by the report's instance, whose history entry says so with
// its metadata, and the attempt's instance says canceled. Before, the two
// were one row, which the attempt's end overwrote to canceled (found by the
// regression audit).
func TestReportUnderTheBuildingRunsID(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		queueRun(t, f, "run_a", 0, 1)
		k := f.sp.Key(0)
		at := db.Millis(f.now)
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2", Parts: []db.PartRef{{Key: k, Idx: 0}}},
		}}, f.now)
		attemptID := db.AttemptInstanceIDs("run_a", 1, "t.hourly")(k)
		m := f.mat(0, db.StatusMaterialized, "run_a", f.now.Add(time.Second))
		m.Metadata = []byte(`{"rows": 7}`)
		res, err := f.store.RecordMaterializations(ctx, []db.Materialization{m}, "test", "", f.now.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		reportID := db.ReportInstanceID("run_a", "t.hourly", k)
		if len(res.Instances) != 1 || res.Instances[0] != reportID || reportID == attemptID {
			t.Fatalf("the report's instance %v, want %s beside the attempt's %s", res.Instances, reportID, attemptID)
		}
		end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptCanceled,
			RunState: db.RunCanceled, CodeVersion: "v2", Started: at, Parts: []db.PartRef{{Key: k, Idx: 0, Status: db.AttemptCanceled}}}
		later := f.now.Add(2 * time.Second)
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
		if r := leaseRows(t, f.store, asset)[k]; r.Status != db.StatusMaterialized || r.Mat == nil || *r.Mat != reportID {
			t.Fatalf("after the canceled attempt: %+v, want materialized by the report's instance %s", r, reportID)
		}
		insts, err := f.store.Instances(ctx, asset, k, 10)
		if err != nil || len(insts) != 2 {
			t.Fatalf("history %+v %v, want the report's and the attempt's instances", insts, err)
		}
		for _, i := range insts {
			switch i.ID {
			case reportID:
				if i.Status != db.StatusMaterialized || i.Metadata == nil || !strings.Contains(*i.Metadata, `"rows": 7`) {
					t.Errorf("the report's instance %+v, want materialized with its metadata", i)
				}
			case attemptID:
				if i.Status != db.AttemptCanceled {
					t.Errorf("the attempt's instance %+v, want canceled", i)
				}
			default:
				t.Errorf("unexpected instance %+v", i)
			}
		}
	})
}

// reindexHourly syncs a workspace whose t.hourly starts at start instead,
// which re-indexes its partitions (and the leases on them), and returns it.
func reindexHourly(t *testing.T, f fixture, start string) *catalog.Workspace {
	t.Helper()
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(`
assets:
  t.hourly:
    partitions: {hourly: {start: "`+start+`"}}
    code_version: v2
    executor: {demo: {duration: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.SyncWorkspace(t.Context(), ws, "test", f.now); err != nil {
		t.Fatal(err)
	}
	return ws
}

// The status rows of a large attempt's partitions leased without a row are
// written in one go when it ends (on PostgreSQL by COPY, status_copy.go);
// when a report wrote one of those rows meanwhile, nothing of the bulk
// write stays and each row is recorded as with smaller attempts: the
// reported partition too ends materialized by the attempt, every other
// row is written once, and the rollups agree with the rows.
func TestFreshRowsOfALargeAttempt(t *testing.T) {
	for _, report := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "reported meanwhile"}[report], func(t *testing.T) {
			eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
				asset := f.ids["t.hourly"]
				idx := make([]int64, 40)
				for i := range idx {
					idx[i] = int64(i)
				}
				at := startRowless(t, f, idx...)
				if report {
					if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(17, db.StatusMaterialized, "ext", f.now.Add(time.Second))}, "test", "", f.now.Add(time.Second)); err != nil {
						t.Fatal(err)
					}
				}
				end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptSucceeded,
					RunState: db.RunSucceeded, CodeVersion: "v2", Started: at}
				for _, i := range idx {
					end.Parts = append(end.Parts, db.PartRef{Key: f.sp.Key(i), Idx: i, Status: db.StatusMaterialized})
				}
				later := f.now.Add(2 * time.Second)
				emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
				id := db.AttemptInstanceIDs("run_a", 1, "t.hourly")
				rows := leaseRows(t, f.store, asset)
				if len(rows) != len(idx) {
					t.Fatalf("report %v: %d status rows, want %d", report, len(rows), len(idx))
				}
				for _, i := range idx {
					if r := rows[f.sp.Key(i)]; r.Status != db.StatusMaterialized || r.Lease != nil || r.Mat == nil || *r.Mat != id(f.sp.Key(i)) || *r.Run != "run_a" {
						t.Fatalf("report %v: partition %d after the attempt: %+v, want materialized by run_a", report, i, r)
					}
				}
				checkRollup(t, f.store)
			})
		})
	}
}
