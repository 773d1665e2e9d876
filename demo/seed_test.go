package demo

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// seedEnv is a fresh SQLite store holding the workspace yaml.
type seedEnv struct {
	store *db.Store
	ws    *catalog.Workspace
	ids   map[string]int64
}

func newSeedEnv(t *testing.T, yaml string) *seedEnv {
	t.Helper()
	store, ws, ids := teststore.WithWorkspace(t, yaml, time.Now())
	return &seedEnv{store: store, ws: ws, ids: ids}
}

// The demo history reports build times like the asset's demo executor's, so
// that a backfill's estimate (made from them) matches what it then takes;
// an asset without a demo executor reports minutes.
func TestSeedReportsExecutorLikeDurations(t *testing.T) {
	t.Parallel()
	env := newSeedEnv(t, teststore.Assets(
		teststore.Asset("s.fast", "{daily: {start: 2025-01-01, end: 2025-03-01}}", "executor: {demo: {duration: 1s-2s}}"),
		teststore.Asset("s.cmd", "{daily: {start: 2025-01-01, end: 2025-03-01}}", "executor: {command: [/bin/true]}"),
	))
	ctx := context.Background()
	if _, err := Seed(ctx, env.store, env.ws, env.ids, time.Now()); err != nil {
		t.Fatal(err)
	}
	ms, n, err := env.store.ReportedMillis(ctx, env.ids["s.fast"])
	if err != nil || n == 0 || ms < 1000 || ms > 2000 {
		t.Errorf("s.fast reports %.0f ms per partition over %d (%v), want between 1,000 and 2,000", ms, n, err)
	}
	ms, n, err = env.store.ReportedMillis(ctx, env.ids["s.cmd"])
	if err != nil || n == 0 || ms < 20_000 || ms > 320_000 {
		t.Errorf("s.cmd reports %.0f ms per partition over %d (%v), want minutes", ms, n, err)
	}
}

// A seeded timeout lasted the asset's timeout: its error and its duration
// agree (before, "timeout after 30m0s" sat on a 625 ms attempt).
func TestSeedTimeoutsLastTheirTimeout(t *testing.T) {
	t.Parallel()
	env := newSeedEnv(t, teststore.Assets(
		teststore.Asset("s.fast", "{hourly: {start: 2024-01-01-00:00, end: 2025-01-01-00:00}}", "timeout: 5m", "executor: {demo: {duration: 100ms-900ms}}"),
	))
	ctx := context.Background()
	if _, err := Seed(ctx, env.store, env.ws, env.ids, time.Now()); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Error string `db:"error"`
		Ms    int64  `db:"ms"`
	}
	if err := env.store.RawReader().SelectContext(ctx, &rows, `SELECT error, finished_at - started_at AS ms FROM partition_instances
		WHERE asset_id = ? AND error LIKE 'timeout%'`, env.ids["s.fast"]); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no seeded timeout among 8,784 partitions")
	}
	for _, r := range rows {
		if r.Error != "timeout after 5m" || r.Ms != 5*60*1000 {
			t.Fatalf("seeded %q lasting %d ms, want \"timeout after 5m\" lasting 300000 ms", r.Error, r.Ms)
		}
	}
}
