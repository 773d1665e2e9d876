package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

var coldWorkspace = teststore.Assets(
	teststore.Asset("up", "{daily: {start: 2025-01-01, end: 2025-03-01}}", "code_version: v1", "freshness: {max_lag: 30h}", "executor: {demo: {duration: 1s}}"),
	teststore.Asset("down", "{daily: {start: 2025-01-01, end: 2025-03-01}}", "deps: [up]", "code_version: v2", `freshness: {by: "09:00", timezone: Europe/Berlin}`, "executor: {demo: {duration: 1s}}"),
	teststore.Asset("hourly", `{hourly: {start: "2024-11-01-00:00", end: "2025-03-01-00:00"}}`, "deps: [up]", "code_version: v2", "freshness: {max_lag: 2h}", "executor: {demo: {duration: 1s}}"),
	teststore.Asset("monthly", "{monthly: {start: 2025-01-01, end: 2025-03-01}}", "deps: [down]", "executor: {demo: {duration: 1s}}"),
	teststore.Asset("feeds", "{dynamic: feeds}", "executor: {demo: {duration: 1s}}"),
)

// coldStore is a store on a database file with its workspace, for
// comparing what a running server computes with what a restarted one does.
type coldStore struct {
	t    *testing.T
	path string
	ws   *catalog.Workspace
	now  time.Time
}

// snapshot words every figure the pages read from an asset's facts, for
// every asset, as computed by store.
func (c *coldStore) snapshot(store *db.Store) string {
	t := c.t
	t.Helper()
	ctx := t.Context()
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := store.LoadDynamicKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := db.StaleInput{WS: c.ws, IDs: ids, SpaceOf: func(a *catalog.Asset) catalog.Space { return a.Scheme.Space(c.now, dyn) }}
	var b strings.Builder
	for _, a := range c.ws.Assets {
		f, err := store.StaleFacts(ctx, in, a)
		if err != nil {
			t.Fatal(err)
		}
		n := f.N
		first, last, ok := f.MaterializedBounds()
		missing, trunc := f.MissingRanges(0, n-1, 50)
		fmt.Fprintf(&b, "%s: n=%d rows=%d counts=%v buckets=%v matstale=%v latest=%d bounds=%d,%d,%v missing=%v,%v stale=%v\n", a.Key, n, f.Rows(),
			f.Counts(0, n-1, c.now), f.BucketCounts(0, n-1, 97, c.now), f.MaterializedStaleBuckets(0, n-1, 97, c.now),
			f.LatestWhere(catalog.Fresh, c.now), first, last, ok, missing, trunc, f.StaleRanges(0, n-1, c.now, true))
		for i := range n {
			fmt.Fprintf(&b, "  %d %s mat=%d code=%q from=%d up=%+v\n", i, f.Reason(i, c.now), f.MatAtOf(i), f.CodeVersionAt(i), f.StaleFromAt(i), f.Upstream(i))
		}
	}
	return b.String()
}

// compare checks, after step, that a restarted server (a new Store on the
// same file) computes what the running one (warm) does, first from the
// status rows of the blocks written since their facts were stored, then,
// once it stored them, from the stored blocks alone; and that no stored
// block differs from its status rows.
func (c *coldStore) compare(step string, warm *db.Store) {
	t := c.t
	t.Helper()
	want := c.snapshot(warm)
	for round := range 2 {
		cold, err := db.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		got := c.snapshot(cold)
		cold.WaitStaleBlocks()
		decoded, miscounted := cold.StaleBlocksDecoded(), cold.StaleMiscounted()
		cold.Close()
		if got != want {
			t.Fatalf("%s, restart %d: the restarted store's staleness differs from the running one's:\n%s", step, round+1, lineDiff(want, got, "running", "restarted"))
		}
		if miscounted != 0 {
			t.Fatalf("%s, restart %d: %d loads found other rows than the rollup (less the leased partitions) counts, and read every status row", step, round+1, miscounted)
		}
		if round == 1 && decoded == 0 {
			t.Fatalf("%s: the second restart decoded no stored block (read every status row)", step)
		}
	}
	diffs, stored, err := warm.CheckStaleBlocks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 || stored == 0 {
		t.Fatalf("%s: %d stored blocks, differences from the status rows: %v", step, stored, diffs)
	}
}

// The first staleness view after a restart reads the stored staleness
// blocks instead of every status row: a new Store on the same file computes
// exactly what the running one does, on fresh, stale (every reason),
// failed, never-materialized and tainted partitions, and keeps doing so
// after each kind of write: reports, the engine's leases and results
// (reports while leased, canceled attempts), taints and their clearing,
// watermarks, upstream rebuilds, dynamic partitions added, and a workspace
// reload that moves every partition index and changes a dependency.
func TestColdStalenessEqualsWarm(t *testing.T) {
	teststore.SkipInRacePass(t)
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "t.db")
		if d == db.Postgres {
			path = pgtest.URL(t)
		}
		store, err := db.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		ws, err := catalog.ParseWorkspace("t.yaml", []byte(coldWorkspace))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2025, 3, 5, 12, 0, 0, 0, time.UTC)
		if err := store.SyncWorkspace(ctx, ws, "test", now); err != nil {
			t.Fatal(err)
		}
		c := &coldStore{t: t, path: path, ws: ws, now: now}
		ids, _ := store.AssetIDs(ctx)
		seq := 0
		report := func(asset string, status, code string, at time.Time, idxs ...int64) {
			t.Helper()
			dyn, _ := store.LoadDynamicKeys(ctx)
			sp := c.ws.Asset(asset).Scheme.Space(now, dyn)
			var ms []db.Materialization
			for _, i := range idxs {
				seq++
				ms = append(ms, db.Materialization{AssetID: ids[asset], AssetKey: asset, Partition: sp.Key(i), Idx: i, Status: status,
					CodeVersion: code, RunID: fmt.Sprintf("r%d", seq), Source: "test", At: at, Error: map[bool]string{true: "boom"}[status == db.StatusFailed]})
			}
			record(t, store, ms, at)
		}

		// Fresh, stale for every reason, failed, holes, tainted.
		report("up", db.StatusMaterialized, "v1", now.Add(-50*time.Hour), span(0, 40, 1)...)
		report("up", db.StatusMaterialized, "v1", now.Add(-10*time.Hour), span(40, 50, 1)...)
		report("up", db.StatusMaterialized, "v0", now.Add(-5*time.Hour), span(50, 55, 1)...)
		report("up", db.StatusFailed, "v1", now.Add(-time.Hour), 45, 56)
		report("down", db.StatusMaterialized, "v2", now.Add(-20*time.Hour), span(0, 50, 1)...)
		report("down", db.StatusMaterialized, "v1", now.Add(-20*time.Hour), 3, 4)
		report("hourly", db.StatusMaterialized, "v2", now.Add(-30*time.Minute), span(0, 2800, 1)...)
		report("hourly", db.StatusMaterialized, "v2", now.Add(-40*time.Hour), span(100, 900, 3)...)
		report("hourly", db.StatusMaterialized, "v1", now.Add(-time.Hour), span(1500, 1600, 1)...)
		report("hourly", db.StatusFailed, "v2", now.Add(-time.Hour), span(2000, 2100, 7)...)
		report("monthly", db.StatusMaterialized, "", now.Add(-70*time.Hour), 0)
		if err := store.Taint(ctx, ids["hourly"], "hourly", ws.Asset("hourly").Scheme.Space(now, nil).Key(10), "bad", "test", now); err != nil {
			t.Fatal(err)
		}
		if err := store.Taint(ctx, ids["up"], "up", "2025-01-03", "bad", "test", now); err != nil {
			t.Fatal(err)
		}
		c.compare("initial", store)

		// The engine: leases (rows that had a status and new ones), a report
		// while leased, then results: built, failed, canceled.
		hsp := ws.Asset("hourly").Scheme.Space(now, nil)
		for i, run := range []string{"run_a", "run_b"} {
			if _, err := store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
			VALUES (?,?,'bf_test',?,0,'hourly',?,'f',4,'queued',3,0,0)`, run, "key:"+run, i, ids["hourly"]); err != nil {
				t.Fatal(err)
			}
		}
		part := func(i int64, prev string) db.PartRef { return db.PartRef{Key: hsp.Key(i), Idx: i, Prev: prev} }
		at := db.Millis(now)
		emit(t, store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: ids["hourly"], Asset: "hourly", CodeVersion: "v2",
				Parts: []db.PartRef{part(5, db.StatusMaterialized), part(1500, db.StatusMaterialized), part(2007, db.StatusFailed), part(2850, "")}},
			{RunID: "run_b", BackfillID: "bf_test", Attempt: 1, AssetID: ids["hourly"], Asset: "hourly", CodeVersion: "v2",
				Parts: []db.PartRef{part(6, db.StatusMaterialized), part(2851, ""), part(2852, ""), part(1024, db.StatusMaterialized)}},
		}}, now)
		c.compare("leases", store)
		report("hourly", db.StatusMaterialized, "v2", now.Add(time.Second), 2851, 6)
		c.compare("report while leased", store)
		fin := func(run, state, runState string, parts map[int64]string) db.AttemptEnd {
			e := db.AttemptEnd{RunID: run, BackfillID: "bf_test", Attempt: 1, AssetID: ids["hourly"], Asset: "hourly", State: state,
				RunState: runState, CodeVersion: "v2", Started: at}
			for _, i := range []int64{5, 6, 1024, 1500, 2007, 2850, 2851, 2852} {
				if s, ok := parts[i]; ok {
					p := part(i, map[int64]string{5: db.StatusMaterialized, 6: db.StatusMaterialized, 1024: db.StatusMaterialized, 1500: db.StatusMaterialized, 2007: db.StatusFailed}[i])
					p.Status = s
					if s == db.StatusFailed {
						p.Error = "boom"
					}
					e.Parts = append(e.Parts, p)
				}
			}
			return e
		}
		later := now.Add(2 * time.Second)
		emit(t, store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{
			fin("run_a", db.AttemptSucceeded, db.RunSucceeded, map[int64]string{5: db.StatusMaterialized, 1500: db.StatusMaterialized, 2007: db.StatusFailed, 2850: db.StatusMaterialized}),
			fin("run_b", db.AttemptCanceled, db.RunCanceled, map[int64]string{6: "", 2851: "", 2852: "", 1024: ""}),
		}}, later)
		c.compare("results", store)

		if err := store.ClearTaint(ctx, ids["hourly"], "hourly", hsp.Key(10), "test", now); err != nil {
			t.Fatal(err)
		}
		if err := store.Taint(ctx, ids["down"], "down", "2025-01-10", "bad", "test", now); err != nil {
			t.Fatal(err)
		}
		c.compare("taints", store)

		if err := store.SetWatermark(ctx, ids["hourly"], "hourly", hsp.Key(2800), 2800, "test", now); err != nil {
			t.Fatal(err)
		}
		report("up", db.StatusMaterialized, "v1", now.Add(-25*time.Hour), 20, 21, 22) // after down's builds: UPSTREAM_CHANGED
		c.compare("watermark and upstream rebuilds", store)

		if _, err := store.AddDynamicKeys(ctx, "feeds", []string{"acme", "globex", "initech"}, "test", now); err != nil {
			t.Fatal(err)
		}
		report("feeds", db.StatusMaterialized, "", now.Add(-time.Hour), 0, 2)
		c.compare("dynamic keys 1", store)
		if _, err := store.AddDynamicKeys(ctx, "feeds", []string{"umbrella"}, "test", now); err != nil {
			t.Fatal(err)
		}
		report("feeds", db.StatusFailed, "", now.Add(-time.Hour), 3)
		c.compare("dynamic keys 2", store)

		// A reload: hourly starts a month earlier (every index moves by 744,
		// across blocks) and down reads hourly too.
		ws2, err := catalog.ParseWorkspace("t.yaml", []byte(strings.NewReplacer(`start: "2024-11-01-00:00"`, `start: "2024-10-01-00:00"`,
			"deps: [up]\n    code_version: v2\n    freshness: {by:", "deps: [up, hourly]\n    code_version: v2\n    freshness: {by:").Replace(coldWorkspace)))
		if err != nil {
			t.Fatal(err)
		}
		if len(ws2.Asset("down").Deps) != 2 {
			t.Fatal("the reloaded workspace does not change down's dependencies")
		}
		if err := store.SyncWorkspace(ctx, ws2, "test", now); err != nil {
			t.Fatal(err)
		}
		c.ws = ws2
		c.compare("workspace reload", store)
		report("hourly", db.StatusMaterialized, "v2", now.Add(-time.Minute), span(3000, 3500, 1)...)
		c.compare("after the reload", store)
	})
}

// Migration 16 stores the staleness facts of the status rows a database
// had before: every block with rows, equal to its rows (code versions
// missing, empty and old, failed and in-progress rows, taints, holes; a
// row outside the key space has no block).
func TestMigrationStoresStalenessBlocks(t *testing.T) {
	t.Parallel()
	store := storeFrom(t, 14,
		`INSERT INTO assets (id, key, grp, description, scheme_kind, scheme_description, scheme_signature, code_version, definition, definition_version, created_at, updated_at)
			VALUES (1, 'm', '', '', 'hourly', '', '', 'v2', '{}', 1, 0, 0)`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2999)
		INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, last_mat_at, last_mat_code_version, tainted_at, updated_at)
		SELECT 1, 'k' || i, i, CASE WHEN i % 7 = 0 THEN 'failed' WHEN i % 11 = 0 THEN 'in_progress' ELSE 'materialized' END, i % 14 <> 0,
			IIF(i % 14 <> 0, 1000 + i, NULL), CASE i % 5 WHEN 0 THEN 'v1' WHEN 1 THEN '' WHEN 2 THEN NULL ELSE 'v2' END, IIF(i % 13 = 0, 5, NULL), 0
		FROM n WHERE i % 17 <> 0`,
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, updated_at) VALUES (1, 'gone', -1, 'failed', 0, 0)`)
	diffs, stored, err := store.CheckStaleBlocks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 || stored != 3 {
		t.Fatalf("after the migration: %d blocks stored (want 3), differences from the rows: %v", stored, diffs)
	}
}

// After an event of unknown effect, an asset's facts loaded from the store
// are kept if none of its status rows was written since (their blocks'
// gens and the rollup's count say so), and reloaded if one was, even when
// the write's own event is read in the same sync.
func TestUnknownEventRevalidatesByGens(t *testing.T) {
	teststore.SkipInRacePass(t)
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		var ms []db.Materialization
		for i := int64(0); i < 3000; i++ {
			ms = append(ms, f.mat(i, db.StatusMaterialized, fmt.Sprint("r", i), f.now.Add(-time.Hour)))
		}
		record(t, f.store, ms, f.now)
		in := staleInputAt(f.ws, f.ids, f.now)
		a := f.ws.Asset("t.hourly")
		facts := func() *db.StaleFacts {
			t.Helper()
			fa, err := f.store.StaleFacts(ctx, in, a)
			if err != nil {
				t.Fatal(err)
			}
			return fa
		}
		unknown := func() {
			t.Helper()
			if err := f.store.AppendBenchEvent(ctx, f.now); err != nil {
				t.Fatal(err)
			}
		}
		unknown()
		facts() // a full load
		f.store.WaitStaleBlocks()
		unknown()
		facts() // a full load from the stored blocks
		reloads, kept := f.store.StaleReloads(), f.store.StaleRevalidated()
		unknown()
		if r := facts().Reason(2500, f.now); r != catalog.Fresh {
			t.Fatalf("partition 2500: %s", r)
		}
		if f.store.StaleReloads() != reloads || f.store.StaleRevalidated() != kept+1 {
			t.Fatalf("an event of unknown effect, nothing written: %d reloads, %d kept; want 0 and 1",
				f.store.StaleReloads()-reloads, f.store.StaleRevalidated()-kept)
		}
		if err := f.store.Taint(ctx, f.ids["t.hourly"], "t.hourly", f.sp.Key(2500), "bad", "test", f.now); err != nil {
			t.Fatal(err)
		}
		unknown()
		if r := facts().Reason(2500, f.now); r != catalog.Tainted {
			t.Fatalf("partition 2500 after its taint and an event of unknown effect: %s", r)
		}
		if f.store.StaleReloads() != reloads+1 {
			t.Fatalf("a taint then an event of unknown effect: %d reloads, want 1", f.store.StaleReloads()-reloads)
		}
	})
}
