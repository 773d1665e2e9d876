package db_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tessera-dev/tessera/db"
)

// A database the store creates has pages of db.NewDatabasePageSize bytes
// and stays in WAL mode; the writer keeps its temporary files (statement
// journals) in memory, the readers on disk; a database created before
// with SQLite's pages of 4,096 bytes opens as it is and keeps them.
func TestNewDatabasePagesAndWriterTempStore(t *testing.T) {
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
	fresh, err := db.Open(filepath.Join(t.TempDir(), "new.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := pragma(fresh.RawReader(), "page_size"); got != int64(db.NewDatabasePageSize) {
		t.Errorf("a new database's page size: %v, want %d", got, db.NewDatabasePageSize)
	}
	if got := pragma(fresh.RawWriter(), "journal_mode"); got != "wal" {
		t.Errorf("a new database's journal mode: %v, want wal", got)
	}
	if got := pragma(fresh.RawWriter(), "temp_store"); got != int64(2) {
		t.Errorf("the writer's temp_store: %v, want 2 (memory)", got)
	}
	if got := pragma(fresh.RawReader(), "temp_store"); got != int64(0) {
		t.Errorf("a reader's temp_store: %v, want 0 (the default: files)", got)
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
	old, err := db.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := pragma(old.RawReader(), "page_size"); got != int64(4096) {
		t.Errorf("a database created before: page size %v, want its 4096 kept", got)
	}
	var x int
	if err := old.RawReader().Get(&x, `SELECT x FROM kept`); err != nil || x != 7 {
		t.Errorf("the earlier database's row: %d, %v", x, err)
	}
}
