package teststore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// Open opens a fresh store file in t.TempDir(), closed when the test ends.
func Open(t testing.TB) *db.Store { return OpenOn(t, db.SQLite) }

// Dialects are the store's backends, in the order tests run them.
var Dialects = []db.Dialect{db.SQLite, db.Postgres}

// OpenOn opens a fresh store of dialect d, closed when the test ends: a
// file in t.TempDir(), or a fresh database of the package's throwaway
// PostgreSQL cluster (pgtest; its TestMain is pgtest.Main's).
func OpenOn(t testing.TB, d db.Dialect) *db.Store {
	t.Helper()
	loc := filepath.Join(t.TempDir(), "t.db")
	if d == db.Postgres {
		loc = pgtest.URL(t)
	}
	return OpenAt(t, loc)
}

// OpenAt opens the store at loc (a file, or the URL of a PostgreSQL
// database another store may share), closed when the test ends.
func OpenAt(t testing.TB, loc string) *db.Store {
	t.Helper()
	store, err := db.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// dialects are the backends Each and EachDialect run a test on: both, but
// in make test's race pass (go test -race -short) SQLite alone. There the
// race detector watches the Go side, which is the same on both backends
// but for the store's dialect code; the tests of what is PostgreSQL's own
// (clusters of instances, LISTEN/NOTIFY, outages) open it themselves and
// run in the race pass too. Running every engine test on both there cost
// half the race pass's CPU and pushed make test past 14 minutes on a slow
// CI machine, where servers then timed out starting.
func dialects() []db.Dialect {
	if testing.Short() {
		return []db.Dialect{db.SQLite}
	}
	return Dialects
}

// Each runs f on each backend, as subtests named "sqlite" and "postgres",
// each with a fresh store (OpenOn). The subtests run one after the other
// (the test itself may be parallel): what the test set up before, and
// defers, serves both.
func Each(t *testing.T, f func(t *testing.T, store *db.Store)) {
	t.Helper()
	for _, d := range dialects() {
		t.Run(d.String(), func(t *testing.T) { f(t, OpenOn(t, d)) })
	}
}

// EachDialect runs f on each backend, as subtests named "sqlite" and
// "postgres" run one after the other (SQLite alone in the race pass:
// dialects), for tests that open their stores
// themselves (OpenOn, WithWorkspaceOn).
func EachDialect(t *testing.T, f func(t *testing.T, d db.Dialect)) {
	t.Helper()
	for _, d := range dialects() {
		t.Run(d.String(), func(t *testing.T) { f(t, d) })
	}
}

// WithWorkspace opens a fresh store (see Open) holding the workspace yaml,
// synced at now, and returns it with the parsed workspace and the assets'
// ids.
func WithWorkspace(t testing.TB, yaml string, now time.Time) (*db.Store, *catalog.Workspace, map[string]int64) {
	t.Helper()
	return WithWorkspaceOn(t, db.SQLite, yaml, now)
}

// WithWorkspaceOn is WithWorkspace on a store of dialect d.
func WithWorkspaceOn(t testing.TB, d db.Dialect, yaml string, now time.Time) (*db.Store, *catalog.Workspace, map[string]int64) {
	t.Helper()
	return withWorkspace(t, OpenOn(t, d), yaml, now)
}

// WithWorkspaceAt is WithWorkspace on the store at loc (OpenAt).
func WithWorkspaceAt(t testing.TB, loc, yaml string, now time.Time) (*db.Store, *catalog.Workspace, map[string]int64) {
	t.Helper()
	return withWorkspace(t, OpenAt(t, loc), yaml, now)
}

func withWorkspace(t testing.TB, store *db.Store, yaml string, now time.Time) (*db.Store, *catalog.Workspace, map[string]int64) {
	t.Helper()
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.SyncWorkspace(ctx, ws, "test", now); err != nil {
		t.Fatal(err)
	}
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return store, ws, ids
}

// Daily is the partitions of a daily asset from 2025-01-01 on, for Asset.
const Daily = `{daily: {start: "2025-01-01"}}`

// Assets is a test workspace's YAML: its assets section holds the given
// assets (Asset), in that order; more sections may follow it.
func Assets(assets ...string) string {
	return "assets:\n" + strings.Join(assets, "")
}

// Asset is one asset of a test workspace (see Assets): partitions is the
// value of its partitions field (Daily, `{static: [a, b]}`), and fields are
// more of its fields, one a line, as in the file ("code_version: v1",
// "retries: {max_attempts: 1}"). Without an executor among them it runs
// the demo executor, 1 ms a partition.
func Asset(name, partitions string, fields ...string) string {
	var b strings.Builder
	b.WriteString("  " + name + ":\n    partitions: " + partitions + "\n")
	executor := false
	for _, f := range fields {
		for _, l := range strings.Split(strings.TrimRight(f, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
		executor = executor || strings.HasPrefix(f, "executor:")
	}
	if !executor {
		b.WriteString("    executor: {demo: {duration: 1ms}}\n")
	}
	return b.String()
}

// SkipInRacePass skips a test that only writes, parses or renders large
// inputs on one goroutine when it runs in `make test`'s race pass (go test
// -race -short): the race detector makes it ten times slower and finds
// nothing there; the plain pass (test-all) runs it, on both dialects.
func SkipInRacePass(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("CPU-bound on one goroutine: run by the plain pass, not the race pass (-short)")
	}
}
