package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// A backfill at full speed writes thousands of partitions between two page
// views. On a large asset the memoized facts take them as a patch (runs of
// neighbours read as ranges), not as a reload of every row, and the patched
// facts equal a full reload: new rows, changed rows, failures, taints and
// scattered single keys included.
func TestStaleFactsPatchBackfillBatch(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspace(t, `assets:
  big:
    partitions: {hourly: {start: "2016-01-01-00:00", end: "2025-02-15-08:00"}}
    code_version: v2
    executor: {demo: {duration: 1s}}
`, now)
	a := ws.Asset("big")
	sp := a.Scheme.Space(now, nil)
	if sp.Len() != 80_000 {
		t.Fatalf("space of %d partitions", sp.Len())
	}
	in := staleInputAt(ws, ids, now)
	seq := 0
	write := func(idxs []int64, status, code string) {
		t.Helper()
		for lo := 0; lo < len(idxs); lo += 10_000 {
			var ms []db.Materialization
			for _, i := range idxs[lo:min(lo+10_000, len(idxs))] {
				seq++
				ms = append(ms, db.Materialization{AssetID: ids["big"], AssetKey: "big", Partition: sp.Key(i), Idx: i, Status: status,
					CodeVersion: code, RunID: fmt.Sprintf("r%d", seq), Source: "test", At: now.Add(-time.Duration(seq) * time.Second)})
			}
			record(t, store, ms, now)
		}
	}
	// Every partition built but odd ones of 20,000-23,000 (holes), some
	// with an old code version.
	write(append(span(0, 20_000, 1), append(span(20_000, 23_000, 2), span(23_000, 80_000, 1)...)...), db.StatusMaterialized, "v2")
	write(span(1_000, 5_000, 10), db.StatusMaterialized, "v1")
	facts := func() *db.StaleFacts {
		t.Helper()
		f, err := store.StaleFacts(ctx, in, a)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	facts()
	reloads := store.StaleReloads()

	// The batch: 6,000 consecutive partitions built (1,500 of them new
	// rows), 1,500 failed, a taint, and scattered single keys.
	write(span(20_000, 26_000, 1), db.StatusMaterialized, "v2")
	write(span(40_000, 41_500, 1), db.StatusFailed, "v2")
	write(span(3, 80_000, 97), db.StatusMaterialized, "v1")
	if err := store.Taint(ctx, ids["big"], "big", sp.Key(50_002), "bad", "test", now); err != nil {
		t.Fatal(err)
	}
	patched := facts()
	if n := store.StaleReloads() - reloads; n != 0 {
		t.Fatalf("a batch of ~8,400 partitions of an 80,000-partition asset reloaded its facts %d times; want a patch", n)
	}
	snapshot := func(f *db.StaleFacts) []string {
		out := make([]string, f.N)
		for i := range f.N {
			out[i] = fmt.Sprintf("%s@%d", f.Reason(i, now), f.MatAtOf(i))
		}
		return out
	}
	got := snapshot(patched)
	// Anything of unknown effect makes the next read a full reload.
	if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
		_, err := db.AppendEvent(ctx, tx, "test.reload", "elsewhere", "test", map[string]any{}, "", now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	full := facts()
	if store.StaleReloads() == reloads {
		t.Fatal("no reload after an event of unknown effect")
	}
	if patched.Rows() != full.Rows() {
		t.Fatalf("patched facts have %d rows, a reload %d", patched.Rows(), full.Rows())
	}
	want := snapshot(full)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("partition %d (%s): patched %s, reloaded %s", i, sp.Key(int64(i)), got[i], want[i])
		}
	}
}
