package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestQueuedWrites: the writes a step makes through execLater (queued on
// PostgreSQL until the transaction next needs its connection) read and
// fail as if each had run at once: a read in the transaction sees them,
// the commit sends what is left, an error of one of them fails the
// transaction and writes nothing of it, and a transaction rolled back
// leaves nothing queued for the next one on the connection.
func TestQueuedWrites(t *testing.T) {
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := context.Background()
		if _, err := store.RawWriter().Exec(`CREATE TABLE queued_test (id BIGINT PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		value := func(id int) (string, bool) {
			t.Helper()
			var vs []string
			if err := store.RawReader().Select(&vs, `SELECT v FROM queued_test WHERE id=?`, id); err != nil {
				t.Fatal(err)
			}
			if len(vs) == 0 {
				return "", false
			}
			return vs[0], true
		}

		// Read back within the transaction, and the last write sent by
		// the commit.
		err := store.Tx(ctx, func(tx *sqlx.Tx) error {
			if err := db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 1, "a"); err != nil {
				return err
			}
			var v string
			if err := tx.GetContext(ctx, &v, `SELECT v FROM queued_test WHERE id=?`, 1); err != nil {
				return err
			}
			if v != "a" {
				t.Errorf("read in the transaction %q, want the queued write's a", v)
			}
			return db.ExecLater(ctx, tx, `UPDATE queued_test SET v=? WHERE id=?`, "b", 1)
		})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := value(1); !ok || v != "b" {
			t.Fatalf("after the commit: %q %v, want b", v, ok)
		}

		// An error of a queued write fails the commit; nothing of the
		// transaction stays.
		err = store.Tx(ctx, func(tx *sqlx.Tx) error {
			if err := db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 2, "x"); err != nil {
				return err
			}
			return db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 1, "duplicate")
		})
		if err == nil || !db.IsUniqueViolation(err) {
			t.Fatalf("transaction with a duplicate key: %v, want the unique violation", err)
		}
		if _, ok := value(2); ok {
			t.Fatal("row 2 of the failed transaction was written")
		}

		// The same error comes back from the next statement that reads (on
		// PostgreSQL, where the write was queued and its call answered
		// nil; on SQLite from the write itself).
		var readErr error
		err = store.Tx(ctx, func(tx *sqlx.Tx) error {
			if err := db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 1, "duplicate"); err != nil {
				if store.Dialect() == db.Postgres {
					t.Errorf("queued write answered %v at once, want nil (queued)", err)
				}
				readErr = err
				return err
			}
			if store.Dialect() == db.SQLite {
				t.Error("SQLite's duplicate key answered nil")
			}
			var n int
			readErr = tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM queued_test`)
			return readErr
		})
		if err == nil || readErr == nil || !db.IsUniqueViolation(readErr) {
			t.Fatalf("read after a failed queued write: %v (transaction %v), want the unique violation", readErr, err)
		}

		// A transaction rolled back leaves nothing queued behind it.
		stop := errors.New("stop")
		if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
			if err := db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 3, "rolled back"); err != nil {
				return err
			}
			return stop
		}); !errors.Is(err, stop) {
			t.Fatalf("rolled back transaction: %v", err)
		}
		if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
			return db.ExecLater(ctx, tx, `INSERT INTO queued_test (id, v) VALUES (?, ?)`, 4, "d")
		}); err != nil {
			t.Fatal(err)
		}
		if _, ok := value(3); ok {
			t.Fatal("the rolled back transaction's queued write was written")
		}
		if v, ok := value(4); !ok || v != "d" {
			t.Fatalf("the next transaction's write: %q %v", v, ok)
		}
	})
}
