package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestStatusCountsInRangeMatchesRows: the counts of a range, read from
// whole rollup blocks and the status rows of the partial blocks at its
// edges, equal a count of the rows, for ranges inside one block, on block
// boundaries, with a partial block at either edge or both, and past the
// stored rows.
func TestStatusCountsInRangeMatchesRows(t *testing.T) {
	teststore.SkipInRacePass(t)
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		batch := f.recordSpread(t)
		count := func(lo, hi int64) db.Counts { return countsIn(batch, lo, hi) }
		b := int64(db.RollupBlock)
		for _, r := range [][2]int64{
			{5, 900},            // inside one block
			{0, b - 1},          // one whole block
			{0, 4*b - 1},        // whole blocks only
			{3, 4*b - 1},        // partial first block
			{0, 3*b + 17},       // partial last block
			{b - 1, 3 * b},      // one partition of each edge block
			{b + 1, 4*b + 900},  // partial at both edges
			{b + 1, 2*b - 2},    // inside one block, not at its edges
			{4 * b, 5*b + 5000}, // past the stored rows
			{9000, 12000},       // nothing stored
		} {
			got, err := f.store.StatusCountsInRange(ctx, f.ids["t.hourly"], r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if want := count(r[0], r[1]); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("[%d, %d]: %v, want %v", r[0], r[1], got, want)
			}
		}
	})
}

// TestLastAttemptStatus: a partition's last attempt status as its row
// records it, "" for a partition never attempted, and the store's error
// (not "") when the store cannot answer.
func TestLastAttemptStatus(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		record(t, f.store, []db.Materialization{f.mat(3, db.StatusFailed, "r", f.now)}, f.now)
		id := f.ids["t.hourly"]
		if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(3)); err != nil || got != db.StatusFailed {
			t.Fatalf("attempted partition: %q, %v; want %q", got, err, db.StatusFailed)
		}
		if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(4)); err != nil || got != "" {
			t.Fatalf("partition never attempted: %q, %v; want \"\", nil", got, err)
		}
		f.store.Close()
		if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(4)); err == nil {
			t.Fatalf("closed store: %q, nil; want its error", got)
		}
	})
}

// A materialized status row stores its ids once; readers see the last
// attempt and the canonical instance as the last materialization.
func TestStatusRowStoresMaterializedIdsOnce(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		t0 := f.now.Add(-time.Hour)
		record(t, f.store, []db.Materialization{f.mat(7, db.StatusMaterialized, "r1", t0)}, f.now)
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
		record(t, f.store, []db.Materialization{f.mat(7, db.StatusFailed, "r2", t0.Add(time.Minute))}, f.now)
		rows, err := f.store.StatusRange(ctx, f.ids["t.hourly"], 7, 7)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%v %v", rows, err)
		}
		p = rows[0]
		if *p.LastAttemptRunID != "r2" || *p.LastAttemptInstanceID != db.InstanceID("r2", "t.hourly", f.sp.Key(7)) || *p.CanonicalInstanceID != want || *p.LastMatRunID != "r1" {
			t.Fatalf("after a failure: %+v", p)
		}
	})
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
	ctx := t.Context()
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
