package db

import (
	"database/sql"
	"fmt"
	"os"

	"github.com/mattn/go-sqlite3"
)

// driverName is the SQLite driver the store opens its connections with: go-
// sqlite3 with tessera_instance_id (instance_ranges.go) registered on every
// connection.
const driverName = "sqlite3_tessera"

// writerDriverName is the driver of the writer connection: the same, its
// temporary files in memory (PRAGMA temp_store = MEMORY). The
// engine's multi-row inserts and updates run inside a transaction, where
// SQLite keeps a statement journal of each (to undo that statement alone
// if it fails) in a temporary file. An strace of tessera bench backfill
// (100,000 partitions, concurrency 8) counted 16,110 page writes to the
// WAL and, beside them, 8,262 page writes and 6,930 writes of a page
// number to those files in /var/tmp. A statement journal holds the pages
// one statement changed, so memory bounds them by the statement. Readers
// keep their temporary files on disk: their sorts of large tables are
// bounded by nothing.
const writerDriverName = "sqlite3_tessera_writer"

// tesseraDriver is that driver (the reader pool opens it through its
// read-counting connector, read_count.go).
var tesseraDriver = &sqlite3.SQLiteDriver{ConnectHook: registerFuncs}

func registerFuncs(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc("tessera_instance_id", attemptInstanceID, true)
}

func init() {
	sql.Register(driverName, tesseraDriver)
	sql.Register(writerDriverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if err := registerFuncs(c); err != nil {
			return err
		}
		_, err := c.Exec(`PRAGMA temp_store = MEMORY`, nil)
		return err
	}})
}

// createWithPageSize creates the SQLite database at path, empty, with
// pages of size bytes (Options.PageSize), unless a file with content is
// there already. The store's databases keep SQLite's default of 4,096:
// pages of 16 KiB halved the system calls of a backfill's commits (a
// commit writes each page it changed to the WAL, two calls a page) but
// made 1,000,000 partitions in chunks of 100 only 3 % faster and 20,000
// runs of one partition 19 % slower (each step changes a few rows of many
// tables, and writes each of their pages whole); 8 KiB lay between. The
// page size is set before the database is in WAL mode (where SQLite keeps
// it) and before another connection has it open: VACUUM of an empty
// database writes its first page with that size. It is best effort: when
// another process creates the database at the same time (its tables
// there, or its lock held), the database is left as that process makes
// it, and a path that cannot be a database fails when the store opens it.
func createWithPageSize(path string, size int) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return
	}
	c, err := sql.Open(driverName, "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		return
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	var tables int
	if err := c.QueryRow(`SELECT COUNT(*) FROM sqlite_schema`).Scan(&tables); err != nil || tables > 0 {
		return
	}
	if _, err := c.Exec(fmt.Sprintf(`PRAGMA page_size = %d`, size)); err != nil {
		return
	}
	_, _ = c.Exec(`VACUUM`)
}
