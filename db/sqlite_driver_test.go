package db_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tessera-dev/tessera/db"
)

// The writer keeps its temporary files (statement journals) in memory, the
// readers on disk. A database the store creates has SQLite's pages of
// 4,096 bytes, or those of Options.PageSize, and is in WAL mode either
// way; a database that exists keeps its pages and its rows whatever
// Options.PageSize says.
func TestWriterTempStoreAndPageSizes(t *testing.T) {
	t.Parallel()
	pragma := func(h interface {
		Get(any, string, ...any) error
	}, name string) any {
		t.Helper()
		var v any
		if err := h.Get(&v, "PRAGMA "+name); err != nil {
			t.Fatalf("PRAGMA %s: %v", name, err)
		}
		return v
	}
	open := func(path string, size int) *db.Store {
		t.Helper()
		s, err := db.OpenWith(path, db.Options{PageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	plain := open(filepath.Join(t.TempDir(), "plain.db"), 0)
	if got := pragma(plain.RawWriter(), "temp_store"); got != int64(2) {
		t.Errorf("the writer's temp_store: %v, want 2 (memory)", got)
	}
	if got := pragma(plain.RawReader(), "temp_store"); got != int64(0) {
		t.Errorf("a reader's temp_store: %v, want 0 (the default: files)", got)
	}
	for _, c := range []struct {
		store *db.Store
		want  int64
	}{{plain, 4096}, {open(filepath.Join(t.TempDir(), "small.db"), 1024), 1024}} {
		if got := pragma(c.store.RawReader(), "page_size"); got != c.want {
			t.Errorf("%s: page size %v, want %d", c.store.Path, got, c.want)
		}
		if got := pragma(c.store.RawWriter(), "journal_mode"); got != "wal" {
			t.Errorf("%s: journal mode %v, want wal", c.store.Path, got)
		}
	}

	// A database of SQLite's default pages, with a table in it.
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE kept (x INTEGER); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	old := open(path, 1024)
	if got := pragma(old.RawReader(), "page_size"); got != int64(4096) {
		t.Errorf("a database that exists: page size %v, want its 4096 kept", got)
	}
	var x int
	if err := old.RawReader().Get(&x, `SELECT x FROM kept`); err != nil || x != 7 {
		t.Errorf("the existing database's row: %d, %v", x, err)
	}
}
