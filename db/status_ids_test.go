package db_test

import (
	"context"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tessera-dev/tessera/db"
)

// A materialized status row stores its ids once; readers see the last
// attempt and the canonical instance as the last materialization.
func TestStatusRowStoresMaterializedIdsOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	t0 := f.now.Add(-time.Hour)
	if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(7, db.StatusMaterialized, "r1", t0)}, "test", "", f.now); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Inst *string `db:"last_attempt_instance_id"`
		Run  *string `db:"last_attempt_run_id"`
	}
	if err := f.store.RawReader().GetContext(ctx, &raw, `SELECT last_attempt_instance_id, last_attempt_run_id FROM partition_status WHERE asset_id=? AND idx=7`, f.ids["t.hourly"]); err != nil {
		t.Fatal(err)
	}
	if raw.Inst != nil || raw.Run != nil {
		t.Fatalf("a materialized last attempt stored its ids twice: %v %v", *raw.Inst, *raw.Run)
	}
	want := db.InstanceID("r1", "t.hourly", f.sp.Key(7))
	p, err := f.store.Partition(ctx, f.ids["t.hourly"], f.sp.Key(7))
	if err != nil {
		t.Fatal(err)
	}
	if p.LastAttemptInstanceID == nil || *p.LastAttemptInstanceID != want || p.LastAttemptRunID == nil || *p.LastAttemptRunID != "r1" ||
		p.CanonicalInstanceID == nil || *p.CanonicalInstanceID != want {
		t.Fatalf("reader did not restore the ids: %+v", p)
	}
	// A failed attempt keeps its own ids; the canonical instance stays the
	// last materialization.
	if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(7, db.StatusFailed, "r2", t0.Add(time.Minute))}, "test", "", f.now); err != nil {
		t.Fatal(err)
	}
	rows, err := f.store.StatusRange(ctx, f.ids["t.hourly"], 7, 7)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%v %v", rows, err)
	}
	p = rows[0]
	if *p.LastAttemptRunID != "r2" || *p.LastAttemptInstanceID != db.InstanceID("r2", "t.hourly", f.sp.Key(7)) || *p.CanonicalInstanceID != want || *p.LastMatRunID != "r1" {
		t.Fatalf("after a failure: %+v", p)
	}
}

// Migration 9 drops the duplicated ids of existing rows without losing what
// readers see.
func TestMigrationStatusIdsOnce(t *testing.T) {
	s := storeFrom(t, 8,
		`INSERT INTO assets (id, key, scheme_kind, scheme_description, scheme_signature, definition, created_at, updated_at) VALUES (1,'t.a','static','x','x','{}',0,0)`,
		// materialized by its last attempt: ids three times
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, last_mat_instance_id, last_mat_run_id, last_mat_at,
			last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, canonical_instance_id, updated_at)
			VALUES (1,'a',0,'materialized',1,'pi_a','run_a',5,'pi_a','run_a',5,'materialized','pi_a',5)`,
		// failed after a materialization: the attempt's ids are its own
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, last_mat_instance_id, last_mat_run_id, last_mat_at,
			last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, last_attempt_error, canonical_instance_id, updated_at)
			VALUES (1,'b',1,'failed',1,'pi_b1','run_b1',5,'pi_b2','run_b2',6,'failed','boom','pi_b1',6)`,
	)
	var stored int
	if err := s.RawReader().Get(&stored, `SELECT COUNT(*) FROM partition_status WHERE last_attempt_instance_id IS NOT NULL`); err != nil || stored != 1 {
		t.Fatalf("rows still storing last-attempt ids: %d (want only the failed one) %v", stored, err)
	}
	ctx := context.Background()
	a, err := s.Partition(ctx, 1, "a")
	if err != nil {
		t.Fatal(err)
	}
	if *a.LastAttemptInstanceID != "pi_a" || *a.LastAttemptRunID != "run_a" || *a.CanonicalInstanceID != "pi_a" {
		t.Fatalf("materialized row after migration: %+v", a)
	}
	b, err := s.Partition(ctx, 1, "b")
	if err != nil {
		t.Fatal(err)
	}
	if *b.LastAttemptInstanceID != "pi_b2" || *b.LastAttemptRunID != "run_b2" || *b.CanonicalInstanceID != "pi_b1" || *b.LastAttemptError != "boom" {
		t.Fatalf("failed row after migration: %+v", b)
	}
}
