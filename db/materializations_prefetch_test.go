package db_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// A batch of reports reads its partitions' rows and instances at once
// (prefetchIngest) instead of item by item, and records exactly what the
// same items recorded one batch each record: new partitions, rebuilt ones,
// a failure then its retry's success in the same batch, a replay of an
// instance recorded before, and a partition an attempt leases without a
// row (its lease becomes the row the report applies over). Status rows,
// instances, rollups and answers are compared as text.
func TestReportBatchReadsAtOnceAsItemByItem(t *testing.T) {
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		other := newFixtureOn(t, f.store.Dialect())
		var before, batch []db.Materialization
		at := func(s int) time.Time { return f.now.Add(time.Duration(s) * time.Second) }
		for i := int64(40); i < 50; i++ {
			before = append(before, f.mat(i, db.StatusMaterialized, fmt.Sprintf("old%d", i), at(1)))
		}
		for i := int64(0); i < 60; i++ {
			batch = append(batch, f.mat(i, db.StatusMaterialized, fmt.Sprintf("new%d", i), at(10)))
			if i%7 == 0 { // a failure, then its retry's success
				m := f.mat(i, db.StatusFailed, fmt.Sprintf("try%d", i), at(5))
				m.Error = "first try failed"
				batch = append(batch[:len(batch)-1], m, batch[len(batch)-1])
			}
		}
		batch = append(batch, before[2], before[3]) // replays
		batch = append(batch, f.mat(70, db.StatusMaterialized, "leased", at(10)))
		for _, s := range []fixture{f, other} {
			record(t, s.store, before, f.now)
			startRowless(t, s, 70, 71)
		}
		got, err := f.store.RecordMaterializations(ctx, batch, "test", "", at(20))
		if err != nil {
			t.Fatal(err)
		}
		var want db.RecordResult
		for _, m := range batch {
			r, err := other.store.RecordMaterializations(ctx, []db.Materialization{m}, "test", "", at(20))
			if err != nil {
				t.Fatal(err)
			}
			want.Recorded += r.Recorded
			want.Replayed += r.Replayed
			want.Instances = append(want.Instances, r.Instances...)
		}
		if got.Recorded != want.Recorded || got.Replayed != want.Replayed || strings.Join(got.Instances, ",") != strings.Join(want.Instances, ",") {
			t.Fatalf("at once: %d recorded, %d replayed; item by item: %d, %d", got.Recorded, got.Replayed, want.Recorded, want.Replayed)
		}
		if got.Replayed != 2 {
			t.Fatalf("%d replayed, want 2", got.Replayed)
		}
		for _, q := range []string{
			`SELECT partition_key, idx, status, materialized, last_mat_instance_id, last_mat_run_id, last_mat_at, last_attempt_instance_id, last_attempt_status, last_attempt_error, lease_instance_id
				FROM partition_status ORDER BY idx`,
			`SELECT partition_key, id, run_id, status, error, started_at, finished_at, supersedes_id FROM partition_instances ORDER BY partition_key, id`,
			`SELECT asset_id, block, status, n FROM partition_rollup WHERE n <> 0 ORDER BY asset_id, block, status`,
		} {
			a, b := dumpRows(t, f.store, q), dumpRows(t, other.store, q)
			if a != b {
				t.Fatalf("%.60s… differs: %s", q, lineDiff(a, b, "at once", "item by item"))
			}
		}
		checkRollup(t, f.store)
	})
}

// dumpRows is the rows of query q as text, a line each.
func dumpRows(t *testing.T, s *db.Store, q string) string {
	t.Helper()
	rows, err := s.RawReader().Queryx(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.SliceScan()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, "%v\t", v)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestReportBatchWaitsForAnotherInstancesStep: on PostgreSQL, a batch of
// reports waits while another instance's controller step holds the step
// lock (LockSteps), so that no attempt of theirs writes the batch's
// partitions between its reads (at its start) and its writes.
func TestReportBatchWaitsForAnotherInstancesStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	url := pgtest.URL(t)
	a, ws, ids := teststore.WithWorkspaceAt(t, url, `assets:
  t.hourly:
    partitions: {hourly: {start: "2025-01-01-00:00"}}
    executor: {demo: {duration: 1s}}
`, now)
	b := teststore.OpenAt(t, url)
	sp := ws.Asset("t.hourly").Scheme.Space(now, nil)
	var items []db.Materialization
	for i := int64(0); i < 20; i++ {
		items = append(items, db.Materialization{AssetID: ids["t.hourly"], AssetKey: "t.hourly", Partition: sp.Key(i), Idx: i,
			Status: db.StatusMaterialized, RunID: "r", Source: "test", At: now})
	}
	release := make(chan struct{})
	var released atomic.Bool
	errc := make(chan error, 1)
	holdStepLock(ctx, a, release, errc, func() { released.Store(true) })
	done := make(chan error, 1)
	go func() {
		_, err := b.RecordMaterializations(ctx, items, "test", "", now)
		done <- err
	}()
	var ended error
	finished := false
	poll.Eventually(t, 30*time.Second, "the report to wait for the step lock (or to end)", func() bool {
		select {
		case ended = <-done:
			finished = true
			return true
		default:
		}
		var n int
		err := a.RawReader().Get(&n, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`)
		return err == nil && n > 0
	})
	close(release)
	if !finished {
		ended = <-done
	}
	if ended != nil {
		t.Fatal(ended)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if finished || !released.Load() {
		t.Fatal("the report was recorded while another instance's step held the step lock")
	}
}
