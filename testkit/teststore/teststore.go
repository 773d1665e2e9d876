// Package teststore opens a real SQLite store for a test, in the test's
// temporary directory. It imports only catalog and db, so the tests inside
// db, jobs and demo (which testkit imports) use it too.
package teststore

import (
	"context"
	"path/filepath"
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
