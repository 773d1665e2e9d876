package db_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// The memoized facts follow the event log: events that cannot change
// partitions keep them, an asset's events invalidate it and its downstreams
// only, backfill attempts invalidate the assets they name, anything else
// invalidates everything. Taints keep the rollup untouched.
func TestStaleFactsInvalidation(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		store, ws, ids := teststore.WithWorkspaceOn(t, d, upDownDaily+`  other:
    partitions: {static: [a, b]}
    executor: {demo: {duration: 1s}}
`, now)
		in := staleInputAt(ws, ids, now)
		facts := func(key string) *db.StaleFacts {
			f, err := store.StaleFacts(ctx, in, ws.Asset(key))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		mat := func(asset, key string, at time.Time) {
			a := ws.Asset(asset)
			i, _ := a.Scheme.Space(now, nil).Index(key)
			if _, err := store.RecordMaterializations(ctx, []db.Materialization{{AssetID: ids[asset], AssetKey: asset, Partition: key, Idx: i,
				Status: db.StatusMaterialized, RunID: asset + key + at.String(), Source: "test", At: at}}, "test", "", now); err != nil {
				t.Fatal(err)
			}
		}
		event := func(typ, subject string, payload any) { appendEvent(t, store, typ, subject, payload, now) }
		mat("down", "2025-01-02", now.Add(-2*time.Hour))
		mat("up", "2025-01-02", now.Add(-3*time.Hour))
		up, down, other := facts("up"), facts("down"), facts("other")
		if r := down.Reason(1, now); r != catalog.Fresh {
			t.Fatalf("down 2025-01-02: %s", r)
		}

		event("user.created", "user:bob", map[string]any{})
		event(db.EvBackfillState, "backfill:b1", map[string]any{})
		if facts("up") != up || facts("down") != down || facts("other") != other {
			t.Fatal("events that cannot change partitions invalidated the facts")
		}

		mat("up", "2025-01-02", now.Add(-time.Hour)) // upstream rebuilt after down
		if facts("other") != other {
			t.Fatal("a write to up invalidated an unrelated asset")
		}
		down = facts("down")
		if r := down.Reason(1, now); r != catalog.UpstreamChanged {
			t.Fatalf("down after its upstream was rebuilt: %s", r)
		}
		if u := down.Upstream(1); u.Asset != "up" || u.Key != "2025-01-02" {
			t.Fatalf("upstream evidence %+v", u)
		}

		up = facts("up")
		event(db.EvAttemptsFinished, "runs", map[string]any{"attempts": []map[string]any{{"asset_id": ids["other"]}}})
		if facts("up") != up || facts("other") == other {
			t.Fatal("an attempt of other must invalidate other only")
		}
		other, down = facts("other"), facts("down")
		event("something.new", "elsewhere", map[string]any{})
		if facts("other") == other || facts("down") == down {
			t.Fatal("an unknown event must invalidate everything")
		}

		// Taint: no rollup change, TAINTED at once, cleared by the next build.
		var before int
		store.RawReader().Get(&before, `SELECT SUM(n) FROM partition_rollup`)
		if err := store.Taint(ctx, ids["down"], "down", "2025-01-02", "bad", "admin", now); err != nil {
			t.Fatal(err)
		}
		if r := facts("down").Reason(1, now); r != catalog.Tainted {
			t.Fatalf("after taint: %s", r)
		}
		var after int
		store.RawReader().Get(&after, `SELECT SUM(n) FROM partition_rollup`)
		if after != before {
			t.Fatalf("taint changed the rollup: %d -> %d", before, after)
		}
		if err := store.Taint(ctx, ids["down"], "down", "2025-01-05", "bad", "admin", now); err != db.ErrNotFound {
			t.Fatalf("taint of a missing partition: %v", err)
		}
		mat("down", "2025-01-02", now)
		if r := facts("down").Reason(1, now); r != catalog.Fresh {
			t.Fatalf("after a rebuild: %s", r)
		}

		// Patched entries equal a full reload.
		mat("down", "2025-01-07", now.Add(-time.Hour))
		mat("up", "2025-01-07", now)
		mat("down", "2025-01-01", now)
		if _, err := store.RawWriter().Exec(`UPDATE partition_status SET status='failed' WHERE asset_id=? AND partition_key='2025-01-01'`, ids["down"]); err != nil {
			t.Fatal(err)
		}
		event("partitions.reported", "asset:down", map[string]any{"items": []map[string]any{{"partition": "2025-01-01"}}})
		patched := facts("down")
		event("something.else", "elsewhere", map[string]any{})
		full := facts("down")
		if patched == full || patched.Rows() != full.Rows() || patched.Rows() != 3 {
			t.Fatalf("rows: patched %d, reloaded %d", patched.Rows(), full.Rows())
		}
		for i := int64(0); i < 10; i++ {
			if patched.Reason(i, now) != full.Reason(i, now) || patched.MatAtOf(i) != full.MatAtOf(i) {
				t.Fatalf("partition %d: patched %s, reloaded %s", i, patched.Reason(i, now), full.Reason(i, now))
			}
		}
		// down: 2025-01-01 materialized then failed (fresh), 2025-01-02 fresh,
		// 2025-01-07 upstream changed; the rest never materialized.
		if rs := full.StaleRanges(0, 9, now, false); len(rs) != 1 || rs[0] != (catalog.IndexRange{Lo: 6, Hi: 6}) {
			t.Fatalf("stale ranges %v", rs)
		}
		if rs := full.StaleRanges(0, 9, now, true); len(rs) != 1 || rs[0] != (catalog.IndexRange{Lo: 2, Hi: 9}) {
			t.Fatalf("missing and stale ranges %v", rs)
		}
		if full.Reason(6, now) != catalog.UpstreamChanged || full.MaterializedStale(now) != 1 {
			t.Fatalf("2025-01-07 %s; materialized stale %d", full.Reason(6, now), full.MaterializedStale(now))
		}
	})
}

// Concurrent writers and readers: whatever the interleaving, the memoized
// (patched) facts end equal to a full reload.
func TestStaleFactsConcurrentPatchesMatchReload(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		store, ws, ids := teststore.WithWorkspaceOn(t, d, `assets:
  up:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-01-11-00:00"}}
    executor: {demo: {duration: 1s}}
  down:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-11}}
    deps: [up]
    code_version: v2
    executor: {demo: {duration: 1s}}
`, now)
		in := staleInputAt(ws, ids, now)
		done := make(chan struct{})
		errs := make(chan error, 16)
		for w := range 3 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range 60 {
					asset := []string{"up", "down"}[(i+w)%2]
					a := ws.Asset(asset)
					sp := a.Scheme.Space(now, nil)
					idx := int64((i*7 + w*13) % int(sp.Len()))
					st, code := db.StatusMaterialized, []string{"v1", "v2"}[i%2]
					if i%5 == 0 {
						st = db.StatusFailed
					}
					at := now.Add(time.Duration(i*w) * time.Minute)
					if _, err := store.RecordMaterializations(ctx, []db.Materialization{{AssetID: ids[asset], AssetKey: asset, Partition: sp.Key(idx), Idx: idx,
						Status: st, CodeVersion: code, RunID: "r" + string(rune('a'+w)) + at.String(), Source: "test", At: at}}, "test", "", now); err != nil {
						errs <- err
						return
					}
					if i%7 == 0 {
						_ = store.Taint(ctx, ids[asset], asset, sp.Key(idx), "t", "test", now)
					}
				}
			}()
		}
		for range 3 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 80 {
					for _, k := range []string{"up", "down"} {
						if _, err := store.StaleFacts(ctx, in, ws.Asset(k)); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		for range 6 {
			<-done
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		snapshot := func(k string) []string {
			f, err := store.StaleFacts(ctx, in, ws.Asset(k))
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for i := range f.N {
				out = append(out, string(f.Reason(i, now))+"@"+time.UnixMilli(f.MatAtOf(i)).String())
			}
			return out
		}
		patched := map[string][]string{"up": snapshot("up"), "down": snapshot("down")}
		appendUnknownEvent(t, store, now)
		for _, k := range []string{"up", "down"} {
			full := snapshot(k)
			for i := range full {
				if full[i] != patched[k][i] {
					t.Fatalf("%s partition %d: patched %s, reloaded %s", k, i, patched[k][i], full[i])
				}
			}
		}
	})
}

// A backfill at full speed writes thousands of partitions between two page
// views. On a large asset the memoized facts take them as a patch (runs of
// neighbours read as ranges), not as a reload of every row, and the patched
// facts equal a full reload: new rows, changed rows, failures, taints and
// scattered single keys included.
func TestStaleFactsPatchBackfillBatch(t *testing.T) {
	teststore.SkipInRacePass(t)
	// SQLite only for now: on PostgreSQL its 90,000 reports, written a
	// statement per row by RecordMaterializations, take two minutes.
	big := newBigAsset(t, db.SQLite)
	if big.sp.Len() != 80_000 {
		t.Fatalf("space of %d partitions", big.sp.Len())
	}
	// Every partition built but odd ones of 20,000-23,000 (holes), some
	// with an old code version.
	big.write(append(span(0, 20_000, 1), append(span(20_000, 23_000, 2), span(23_000, 80_000, 1)...)...), db.StatusMaterialized, "v2")
	big.write(span(1_000, 5_000, 10), db.StatusMaterialized, "v1")
	big.facts()
	reloads := big.store.StaleReloads()

	// The batch: 6,000 consecutive partitions built (1,500 of them new
	// rows), 1,500 failed, a taint, and scattered single keys.
	big.write(span(20_000, 26_000, 1), db.StatusMaterialized, "v2")
	big.write(span(40_000, 41_500, 1), db.StatusFailed, "v2")
	big.write(span(3, 80_000, 97), db.StatusMaterialized, "v1")
	if err := big.store.Taint(t.Context(), big.ids["big"], "big", big.sp.Key(50_002), "bad", "test", big.now); err != nil {
		t.Fatal(err)
	}
	patched := big.facts()
	if n := big.store.StaleReloads() - reloads; n != 0 {
		t.Fatalf("a batch of ~8,400 partitions of an 80,000-partition asset reloaded its facts %d times; want a patch", n)
	}
	// Anything of unknown effect makes the next read a full reload.
	full := reloadAfterUnknownEvent(t, big.store, big.now, big.facts)
	if patched.Rows() != full.Rows() {
		t.Fatalf("patched facts have %d rows, a reload %d", patched.Rows(), full.Rows())
	}
	big.samePatched(patched, full)
}

// Between two computations of a running backfill's pages (StaleInput.MaxLag)
// tens of thousands of consecutive partitions change: more keys than
// patchLimit, but few ranges, so the facts are patched, not reloaded, and
// equal a full reload.
func TestStaleFactsPatchManyConsecutive(t *testing.T) {
	teststore.SkipInRacePass(t)
	t.Parallel()
	big := newBigAsset(t, db.SQLite)
	big.write(span(0, 40_000, 1), db.StatusMaterialized, "v2")
	big.facts()
	reloads := big.store.StaleReloads()
	// 30,000 consecutive partitions: 10,000 rebuilt, 20,000 new rows, a
	// stretch of them failed.
	big.write(span(30_000, 60_000, 1), db.StatusMaterialized, "v2")
	big.write(span(50_000, 52_000, 1), db.StatusFailed, "v2")
	patched := big.facts()
	if n := big.store.StaleReloads() - reloads; n != 0 {
		t.Fatalf("30,000 consecutive partitions of a 40,000-row asset reloaded its facts %d times; want a patch", n)
	}
	full := reloadAfterUnknownEvent(t, big.store, big.now, big.facts)
	if patched.Rows() != full.Rows() || full.Rows() != 60_000 {
		t.Fatalf("patched facts have %d rows, a reload %d; want 60,000", patched.Rows(), full.Rows())
	}
	big.samePatched(patched, full)
}

// bigAsset is a store of one hourly asset of 80,000 partitions ("big", at
// code version v2) that the patch tests write in bulk.
type bigAsset struct {
	t     *testing.T
	store *db.Store
	ids   map[string]int64
	a     *catalog.Asset
	sp    catalog.Space
	in    db.StaleInput
	now   time.Time
	seq   int
}

func newBigAsset(t *testing.T, d db.Dialect) *bigAsset {
	t.Helper()
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspaceOn(t, d, `assets:
  big:
    partitions: {hourly: {start: "2016-01-01-00:00", end: "2025-02-15-08:00"}}
    code_version: v2
    executor: {demo: {duration: 1s}}
`, now)
	a := ws.Asset("big")
	return &bigAsset{t: t, store: store, ids: ids, a: a, sp: a.Scheme.Space(now, nil), in: staleInputAt(ws, ids, now), now: now}
}

// write records the partitions idxs with status, built by code version
// code, 10,000 a batch, each one second older than the one before.
func (b *bigAsset) write(idxs []int64, status, code string) {
	b.t.Helper()
	for lo := 0; lo < len(idxs); lo += 10_000 {
		var ms []db.Materialization
		for _, i := range idxs[lo:min(lo+10_000, len(idxs))] {
			b.seq++
			ms = append(ms, db.Materialization{AssetID: b.ids["big"], AssetKey: "big", Partition: b.sp.Key(i), Idx: i, Status: status,
				CodeVersion: code, RunID: fmt.Sprintf("r%d", b.seq), Source: "test", At: b.now.Add(-time.Duration(b.seq) * time.Second)})
		}
		record(b.t, b.store, ms, b.now)
	}
}

// facts reads the asset's staleness facts (memoized: a patch or a reload).
func (b *bigAsset) facts() *db.StaleFacts {
	b.t.Helper()
	f, err := b.store.StaleFacts(b.t.Context(), b.in, b.a)
	if err != nil {
		b.t.Fatal(err)
	}
	return f
}

// samePatched fails the test at the first partition whose patched facts
// (reason, materialization time) differ from the full reload's.
func (b *bigAsset) samePatched(patched, full *db.StaleFacts) {
	b.t.Helper()
	for i := range full.N {
		if p, f := patched.Reason(i, b.now), full.Reason(i, b.now); p != f || patched.MatAtOf(i) != full.MatAtOf(i) {
			b.t.Fatalf("partition %d (%s): patched %s@%d, reloaded %s@%d", i, b.sp.Key(int64(i)), p, patched.MatAtOf(i), f, full.MatAtOf(i))
		}
	}
}

// appendEvent appends an event of type typ on subject with payload, by
// "test" at now, in a transaction of its own.
func appendEvent(t *testing.T, store *db.Store, typ, subject string, payload any, now time.Time) {
	t.Helper()
	ctx := t.Context()
	if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
		_, err := db.AppendEvent(ctx, tx, typ, subject, "test", payload, "", now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// appendUnknownEvent appends an event whose effect on the staleness facts is
// unknown: the next read of them is a full reload.
func appendUnknownEvent(t *testing.T, store *db.Store, now time.Time) {
	t.Helper()
	appendEvent(t, store, "test.reload", "elsewhere", map[string]any{}, now)
}

// reloadAfterUnknownEvent appends an event of unknown effect and reads the
// facts again with read: t fails unless that read was a full reload.
func reloadAfterUnknownEvent(t *testing.T, store *db.Store, now time.Time, read func() *db.StaleFacts) *db.StaleFacts {
	t.Helper()
	reloads := store.StaleReloads()
	appendUnknownEvent(t, store, now)
	full := read()
	if store.StaleReloads() == reloads {
		t.Fatal("no reload after an event of unknown effect")
	}
	return full
}

// With StaleInput.MaxLag, facts computed less than MaxLag ago answer for a
// newer version when only backfill progress (attempts, runs planned)
// happened since; any other change (a report, a backfill's state, a taint)
// is shown at once, and so is progress once the facts are MaxLag old.
// Without MaxLag the facts are exactly at the version.
func TestStaleFactsMaxLag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspace(t, upDownDaily, now)
	exact := staleInputAt(ws, ids, now)
	lagging := exact
	lagging.MaxLag = time.Hour // no test run is this slow: the window never ends by itself
	facts := func(in db.StaleInput, key string) *db.StaleFacts {
		t.Helper()
		f, err := store.StaleFacts(ctx, in, ws.Asset(key))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	event := func(typ, subject string, payload any) {
		t.Helper()
		appendEvent(t, store, typ, subject, payload, now)
	}
	progress := func() {
		event(db.EvRunsPlanned, "backfill:b1", map[string]any{"runs": []any{}})
		event(db.EvAttemptsFinished, "runs", map[string]any{"attempts": []map[string]any{{"asset_id": ids["up"]}}})
	}
	up, down := facts(lagging, "up"), facts(lagging, "down")

	progress()
	if facts(lagging, "up") != up || facts(lagging, "down") != down {
		t.Fatal("facts recomputed within MaxLag after backfill progress only")
	}
	if facts(exact, "up") == up || facts(exact, "down") == down {
		t.Fatal("facts without MaxLag not recomputed after an attempt of up")
	}

	up, down = facts(lagging, "up"), facts(lagging, "down")
	progress()
	event(db.EvBackfillState, "backfill:b1", map[string]any{})
	if facts(lagging, "up") == up || facts(lagging, "down") == down {
		t.Fatal("a backfill's state change after its progress not shown at once")
	}

	up = facts(lagging, "up")
	event("partitions.reported", "asset:up", map[string]any{"items": []map[string]any{{"partition": "2025-01-02"}}})
	if facts(lagging, "up") == up {
		t.Fatal("a report not shown at once")
	}

	short := exact
	short.MaxLag = time.Millisecond
	up = facts(short, "up")
	progress()
	time.Sleep(2 * time.Millisecond) // past the lag: the only way to test its end
	if facts(short, "up") == up {
		t.Fatal("progress not shown once the facts are MaxLag old")
	}
}
