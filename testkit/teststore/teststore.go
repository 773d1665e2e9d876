// Package teststore opens a real SQLite store for a test, in the test's
// temporary directory. It imports only catalog and db, so the tests inside
// db, jobs and demo (which testkit imports) use it too.
package teststore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Open opens a fresh store file in t.TempDir(), closed when the test ends.
func Open(t testing.TB) *db.Store {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// WithWorkspace opens a fresh store (see Open) holding the workspace yaml,
// synced at now, and returns it with the parsed workspace and the assets'
// ids.
func WithWorkspace(t testing.TB, yaml string, now time.Time) (*db.Store, *catalog.Workspace, map[string]int64) {
	t.Helper()
	store := Open(t)
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
