package db_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

var testWorkspace = teststore.Assets(
	teststore.Asset("t.hourly", `{hourly: {start: "2025-01-01-00:00"}}`, "code_version: v2", "executor: {demo: {duration: 1s}}"),
	teststore.Asset("t.static", "{static: [a, b, c]}", "executor: {demo: {duration: 1s}}"),
)

type fixture struct {
	store *db.Store
	ws    *catalog.Workspace
	ids   map[string]int64
	sp    catalog.Space
	now   time.Time
}

func newFixture(t *testing.T) fixture { t.Helper(); return newFixtureOn(t, db.SQLite) }

// newFixtureOn is newFixture on a store of dialect d.
func newFixtureOn(t *testing.T, d db.Dialect) fixture {
	t.Helper()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspaceOn(t, d, testWorkspace, now)
	return fixture{store, ws, ids, ws.Asset("t.hourly").Scheme.Space(now, nil), now}
}

// eachFixture runs test on a fixture of each dialect (a subtest each), with
// a context for the store's calls.
func eachFixture(t *testing.T, test func(ctx context.Context, t *testing.T, f fixture)) {
	t.Helper()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) { test(t.Context(), t, newFixtureOn(t, d)) })
}

func (f fixture) mat(i int64, status, run string, at time.Time) db.Materialization {
	return db.Materialization{AssetID: f.ids["t.hourly"], AssetKey: "t.hourly", Partition: f.sp.Key(i), Idx: i,
		Status: status, CodeVersion: "v2", RunID: run, Source: "test", At: at}
}

// recordSpread records the first 5,000 partitions of t.hourly but every
// 7th (missing), every 11th failed, the rest materialized, checks the
// rollup, and returns what it recorded.
func (f fixture) recordSpread(t *testing.T) []db.Materialization {
	t.Helper()
	var batch []db.Materialization
	for i := int64(0); i < 5000; i++ {
		if i%7 == 0 {
			continue
		}
		st := db.StatusMaterialized
		if i%11 == 0 {
			st = db.StatusFailed
		}
		batch = append(batch, f.mat(i, st, "r", f.now))
	}
	record(t, f.store, batch, f.now)
	checkRollup(t, f.store)
	return batch
}

// countsIn counts the statuses of the partitions of batch with an index in
// [lo, hi].
func countsIn(batch []db.Materialization, lo, hi int64) db.Counts {
	c := db.Counts{}
	for _, m := range batch {
		if m.Idx >= lo && m.Idx <= hi {
			c[m.Status]++
		}
	}
	return c
}

// checkRollup asserts the rollup equals the partitions' statuses per block
// as readers see them: the status rows, and the partitions running attempts
// lease without a row (in progress).
func checkRollup(t *testing.T, s *db.Store) {
	t.Helper()
	type cell struct {
		Asset  int64  `db:"asset_id"`
		Block  int64  `db:"block"`
		Status string `db:"status"`
	}
	var rolled []struct {
		cell
		N int64 `db:"n"`
	}
	if err := s.RawReader().Select(&rolled, `SELECT asset_id, block, status, n FROM partition_rollup WHERE n != 0`); err != nil {
		t.Fatal(err)
	}
	var assets []int64
	if err := s.RawReader().Select(&assets, `SELECT id FROM assets`); err != nil {
		t.Fatal(err)
	}
	want := map[cell]int64{}
	for _, a := range assets {
		rows, err := s.StatusRange(t.Context(), a, 0, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want[cell{a, r.Idx >> db.RollupShift, r.Status}]++
		}
	}
	diff := 0
	for _, r := range rolled {
		if want[r.cell] != r.N {
			diff++
		}
		delete(want, r.cell)
	}
	diff += len(want)
	if diff != 0 {
		t.Fatalf("partition_rollup disagrees with partition_status in %d rows", diff)
	}
}

func TestOpenAppliesMigrationsAndPragmas(t *testing.T) {
	f := newFixture(t)
	v, err := f.store.MigrationVersion()
	if err != nil || v < 1 {
		t.Fatalf("migration version %d, %v", v, err)
	}
	var mode string
	if err := f.store.RawWriter().Get(&mode, "PRAGMA journal_mode"); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	var fk int
	if err := f.store.RawWriter().Get(&fk, "PRAGMA foreign_keys"); err != nil || fk != 1 {
		t.Fatalf("foreign_keys %d, %v", fk, err)
	}
	if _, err := f.store.RawReader().Exec(`INSERT INTO settings (name, value) VALUES ('x','y')`); err == nil {
		t.Fatal("reader pool accepted a write")
	}
}

func TestRecordMaterializationsHistoryAndSupersede(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		t0 := f.now.Add(-time.Hour)
		// failed, then materialized, then materialized again by another run.
		for i, m := range []db.Materialization{
			f.mat(5, db.StatusFailed, "r1", t0),
			f.mat(5, db.StatusMaterialized, "r2", t0.Add(time.Minute)),
			f.mat(5, db.StatusMaterialized, "r3", t0.Add(2*time.Minute)),
		} {
			if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{m}, "test", "", f.now); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		p, err := f.store.Partition(ctx, f.ids["t.hourly"], f.sp.Key(5))
		if err != nil {
			t.Fatal(err)
		}
		want := db.InstanceID("r3", "t.hourly", f.sp.Key(5))
		if p.Status != db.StatusMaterialized || *p.CanonicalInstanceID != want || *p.LastMatRunID != "r3" {
			t.Fatalf("status row %+v", p)
		}
		insts, err := f.store.Instances(ctx, f.ids["t.hourly"], f.sp.Key(5), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(insts) != 3 || insts[0].RunID != "r3" || insts[2].RunID != "r1" {
			t.Fatalf("instances newest first: %+v", insts)
		}
		if insts[0].SupersedesID == nil || *insts[0].SupersedesID != db.InstanceID("r2", "t.hourly", f.sp.Key(5)) {
			t.Fatalf("r3 should supersede r2: %+v", insts[0])
		}
		// A failure after a success keeps the last materialization but shows failed.
		record(t, f.store, []db.Materialization{f.mat(5, db.StatusFailed, "r4", t0.Add(3*time.Minute))}, f.now)
		p, _ = f.store.Partition(ctx, f.ids["t.hourly"], f.sp.Key(5))
		if p.Status != db.StatusFailed || *p.LastMatRunID != "r3" || *p.LastAttemptRunID != "r4" {
			t.Fatalf("after failure: %+v", p)
		}
		// A late report of an older attempt is history only.
		record(t, f.store, []db.Materialization{f.mat(5, db.StatusMaterialized, "r0", t0.Add(-time.Hour))}, f.now)
		p, _ = f.store.Partition(ctx, f.ids["t.hourly"], f.sp.Key(5))
		if p.Status != db.StatusFailed || *p.LastAttemptRunID != "r4" {
			t.Fatalf("old report moved the projection: %+v", p)
		}
		// Replaying the same run's report is a no-op.
		res, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(5, db.StatusMaterialized, "r3", t0.Add(2*time.Minute))}, "test", "", f.now)
		if err != nil || res.Replayed != 1 || res.Recorded != 0 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		checkRollup(t, f.store)
	})
}

func TestRecordMaterializationsIdempotencyKey(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		batch := []db.Materialization{f.mat(1, db.StatusMaterialized, "a", f.now), f.mat(2, db.StatusMaterialized, "a", f.now)}
		if _, err := f.store.RecordMaterializations(ctx, batch, "test", "k1", f.now); err != nil {
			t.Fatal(err)
		}
		batch[0].RunID, batch[1].RunID = "b", "b"
		res, err := f.store.RecordMaterializations(ctx, batch, "test", "k1", f.now)
		if err != nil || res.Recorded != 0 || res.Replayed != 2 {
			t.Fatalf("same idempotency key recorded again: %+v %v", res, err)
		}
		var n int
		f.store.RawReader().Get(&n, `SELECT COUNT(*) FROM partition_instances`)
		if n != 2 {
			t.Fatalf("%d instances, want 2", n)
		}
	})
}

func TestBucketCountsRollupMatchesScan(t *testing.T) {
	teststore.SkipInRacePass(t)
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		batch := f.recordSpread(t)
		id := f.ids["t.hourly"]
		viaRollup, err := f.store.BucketCounts(ctx, id, 0, 4095, 2048)
		if err != nil {
			t.Fatal(err)
		}
		viaPartial, err := f.store.BucketCounts(ctx, id, 0, 4999, 2048)
		if err != nil {
			t.Fatal(err)
		}
		viaScan, err := f.store.BucketCounts(ctx, id, 1, 4999, 1000)
		if err != nil {
			t.Fatal(err)
		}
		count := func(lo, hi int64) db.Counts { return countsIn(batch, lo, hi) }
		eq := func(a, b db.Counts) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
		if !eq(viaRollup[0], count(0, 2047)) || !eq(viaRollup[1], count(2048, 4095)) {
			t.Fatalf("rollup buckets %v", viaRollup)
		}
		if len(viaPartial) != 3 || !eq(viaPartial[2], count(4096, 4999)) {
			t.Fatalf("partial last bucket %v want %v", viaPartial, count(4096, 4999))
		}
		if !eq(viaScan[0], count(1, 1000)) || !eq(viaScan[4], count(4001, 4999)) {
			t.Fatalf("scan buckets %v", viaScan)
		}
		missing, err := f.store.MissingAfter(ctx, id, -1, 6000, 5)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(missing) != "[0 7 14 21 28]" {
			t.Fatalf("missing %v", missing)
		}
		missing, _ = f.store.MissingAfter(ctx, id, 4995, 5003, 10)
		if fmt.Sprint(missing) != "[4998 5000 5001 5002]" {
			t.Fatalf("missing near the end %v", missing)
		}
	})
}

// TestConcurrentWritersAndReaders: 32 goroutines write and read a real file
// database at once; no "database is locked", no lost write.
func TestConcurrentWritersAndReaders(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		// 32 writers; 10 writes each in the race pass (-short), where
		// each is ten times slower, 40 in the plain one.
		const workers = 32
		perWorker := int64(40)
		if testing.Short() {
			perWorker = 10
		}
		var wg sync.WaitGroup
		errs := make(chan error, workers*perWorker)
		for w := range int64(workers) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range perWorker {
					i := w*perWorker + j
					_, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(i, db.StatusMaterialized, fmt.Sprintf("w%d", w), f.now)}, "test", "", f.now)
					if err != nil {
						errs <- fmt.Errorf("write %d: %w", i, err)
						return
					}
					if _, err := f.store.AssetCounts(ctx); err != nil {
						errs <- fmt.Errorf("read: %w", err)
						return
					}
					if _, err := f.store.StatusRange(ctx, f.ids["t.hourly"], w*perWorker, w*perWorker+perWorker); err != nil {
						errs <- fmt.Errorf("read range: %w", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		counts, err := f.store.AssetCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := counts[f.ids["t.hourly"]][db.StatusMaterialized]; got != workers*perWorker {
			t.Fatalf("%d materialized, want %d", got, workers*perWorker)
		}
		events, _ := f.store.CountEvents(ctx)
		if events < workers*perWorker {
			t.Fatalf("%d events for %d writes", events, workers*perWorker)
		}
		checkRollup(t, f.store)
	})
}

func TestSyncWorkspaceChangesAndReindex(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		record(t, f.store, []db.Materialization{f.mat(48, db.StatusMaterialized, "r", f.now)}, f.now)
		// The scheme now starts a day later: partition 48 becomes index 24.
		changed := teststore.Assets(
			teststore.Asset("t.hourly", `{hourly: {start: "2025-01-02-00:00"}}`, "code_version: v3", "executor: {demo: {duration: 1s}}"),
		)
		ws, err := catalog.ParseWorkspace("t.yaml", []byte(changed))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.SyncWorkspace(ctx, ws, "test", f.now); err != nil {
			t.Fatal(err)
		}
		a, err := f.store.AssetByKey(ctx, "t.hourly")
		if err != nil || a.DefinitionVersion != 2 || a.CodeVersion != "v3" {
			t.Fatalf("asset after change %+v %v", a, err)
		}
		p, err := f.store.Partition(ctx, a.ID, "2025-01-03-00:00")
		if err != nil || p.Idx != 24 {
			t.Fatalf("reindexed partition %+v %v", p, err)
		}
		if _, err := f.store.AssetByKey(ctx, "t.static"); err == nil {
			t.Fatal("asset dropped from the workspace is still listed")
		}
		checkRollup(t, f.store)
		evs, _ := f.store.EventsBySubject(ctx, "asset:t.static", 10)
		if len(evs) != 2 || evs[0].Type != "asset.removed" {
			t.Fatalf("events for removed asset: %+v", evs)
		}
	})
}

// Instance ids are stored in status rows, instances and events: the
// derivation must never change between versions (values computed
// independently from the documented formula).
func TestInstanceIDsAreStable(t *testing.T) {
	want := map[string]string{
		"2025-03-01-00:00": "pi_nxhg7tvuccxtrhzt7qbb2s6r",
		"2025-03-01-01:00": "pi_nxhg7tvuccx5ye4gyljpyczs",
	}
	ids := db.InstanceIDs("run_abc", "raw.events")
	for p, w := range want {
		if got := db.InstanceID("run_abc", "raw.events", p); got != w {
			t.Errorf("InstanceID(%s) = %s, want %s", p, got, w)
		}
		if got := ids(p); got != w {
			t.Errorf("InstanceIDs(...)(%s) = %s, want %s", p, got, w)
		}
	}
	if db.InstanceID("run_abc", "raw.events", "x") == db.InstanceID("run_abd", "raw.events", "x") {
		t.Error("different runs gave the same instance id")
	}
}
