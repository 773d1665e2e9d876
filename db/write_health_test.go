package db_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// bigWrite is a command that needs new pages: a small row, then a big one
// (so that a failure after the first statement shows whether anything was
// half-written).
func bigWrite(ctx context.Context, s *db.Store, name string) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, 'small')`, name+"_small"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, zeroblob(1048576))`, name)
		return err
	})
}

func waitWritable(t *testing.T, s *db.Store) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "the store to stop reporting failing writes after the cause went", func() bool { return !s.WriteHealth().Failing })
}

func TestWriteFaultsAreClassified(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := db.OpenWith(path, db.Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetFaultHold(time.Hour) // until the hold is checked below

	// An ordinary error is not a write fault.
	plain := errors.New("bad input")
	if err := s.Tx(ctx, func(*sqlx.Tx) error { return plain }); err != plain {
		t.Fatalf("a command's own error came back as %v", err)
	}
	if h := s.WriteHealth(); h.Failing {
		t.Fatalf("an ordinary error set the store failing: %+v", h)
	}

	// Disk full.
	free := s.FillForTest(false, t.Fatal)
	before := time.Now()
	err = bigWrite(ctx, s, "full")
	var we *db.WriteError
	if !errors.As(err, &we) || we.Cause != db.CauseDiskFull {
		t.Fatalf("a write to a full database failed with %v (%T), want a *db.WriteError with cause disk_full", err, err)
	}
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("the WriteError does not wrap the driver's SQLITE_FULL: %v", err)
	}
	if we.Since.Before(before.Add(-time.Second)) || we.Since.After(time.Now()) {
		t.Fatalf("WriteError.Since = %v, want about now", we.Since)
	}
	if h := s.WriteHealth(); !h.Failing || h.Cause != db.CauseDiskFull || !h.Since.Equal(we.Since) {
		t.Fatalf("WriteHealth = %+v, want failing with disk_full since %v", h, we.Since)
	}
	var n int
	if err := s.RawReader().Get(&n, `SELECT count(*) FROM settings WHERE name LIKE 'full%'`); err != nil || n != 0 {
		t.Fatalf("the failed command left %d rows (%v), want none", n, err)
	}
	if got := s.WriteFailures()[db.CauseDiskFull]; got != 1 {
		t.Fatalf("WriteFailures[disk_full] = %d, want 1", got)
	}
	// Still full: a write in place does not make it writable.
	if err := bigWrite(ctx, s, "full2"); !errors.As(err, &we) || we.Cause != db.CauseDiskFull {
		t.Fatalf("second write to the full database: %v", err)
	}
	free()
	// Space is back and writes go through, but the spell is reported for
	// the fault hold after its last failure (a probe fits where the next
	// command may not: readiness must not flap).
	testkit.Eventually(t, 20*time.Second, "a write to go through after space returned", func() bool { return bigWrite(ctx, s, "after") == nil })
	probes := s.Probes()
	testkit.Eventually(t, 20*time.Second, "two more probe writes", func() bool { return s.Probes() >= probes+2 })
	if h := s.WriteHealth(); !h.Failing {
		t.Fatalf("the store reported writable at once after a disk-full spell, within its fault hold")
	}
	s.SetFaultHold(10 * time.Millisecond)
	waitWritable(t, s)

	// Locked by another process's write transaction.
	other, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	err = bigWrite(ctx, s, "locked")
	if !errors.As(err, &we) || we.Cause != db.CauseLocked {
		t.Fatalf("a write to a locked database failed with %v (%T), want a *db.WriteError with cause locked", err, err)
	}
	if h := s.WriteHealth(); !h.Failing || h.Cause != db.CauseLocked {
		t.Fatalf("WriteHealth = %+v, want failing with locked", h)
	}
	if got := s.WriteFailures()[db.CauseLocked]; got != 1 {
		t.Fatalf("WriteFailures[locked] = %d, want 1", got)
	}
	// While it is locked, writes are refused at once: not one busy timeout
	// after another on the single writer.
	if err := bigWrite(ctx, s, "locked-again"); !errors.As(err, &we) || we.Cause != db.CauseLocked || !strings.Contains(err.Error(), "another process holds the database's write lock") {
		t.Fatalf("a write while the store knows it is locked: %v, want refused at once", err)
	}
	if got := s.WriteFailures()[db.CauseLocked]; got != 2 {
		t.Fatalf("WriteFailures[locked] = %d after a refused write, want 2", got)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	waitWritable(t, s)
	if err := bigWrite(ctx, s, "unlocked"); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}

	// Read-only (query_only makes SQLite answer SQLITE_READONLY, as for a
	// read-only file, which root would still write).
	if _, err := s.RawWriter().Exec(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	err = bigWrite(ctx, s, "readonly")
	if !errors.As(err, &we) || we.Cause != db.CauseReadOnly {
		t.Fatalf("a write to a read-only database failed with %v (%T), want a *db.WriteError with cause read_only", err, err)
	}
	if _, err := s.RawWriter().Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	waitWritable(t, s)
	if got := s.WriteFailures(); got[db.CauseReadOnly] != 1 || got[db.CauseDiskFull] != 2 || got[db.CauseLocked] != 2 {
		t.Fatalf("WriteFailures = %v, want read_only 1, disk_full 2, locked 2", got)
	}
}
