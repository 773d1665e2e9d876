package db

import (
	"database/sql"
	"database/sql/driver"
	"strconv"

	"github.com/mattn/go-sqlite3"
)

// driverName is the SQLite driver the store opens its connections with: go-
// sqlite3 with tessera_instance_id (instance_ranges.go) registered on every
// connection.
const driverName = "sqlite3_tessera"

// writerDriverName is the driver of the writer connection: the same, with
// two settings for the engine's write path.
//
// Its temporary files are in memory (PRAGMA temp_store = MEMORY). The
// engine's multi-row inserts and updates run inside a transaction, where
// SQLite keeps a statement journal of each (to undo that statement alone
// if it fails) in a temporary file. An strace of tessera bench backfill
// (100,000 partitions, concurrency 8) counted 16,110 page writes to the
// WAL and, beside them, 8,262 page writes and 6,930 writes of a page
// number to those files in /var/tmp. A statement journal holds the pages
// one statement changed, so memory bounds them by the statement. Readers
// keep their temporary files on disk: their sorts of large tables are
// bounded by nothing.
//
// A database it creates has pages of NewDatabasePageSize bytes.
const writerDriverName = "sqlite3_tessera_writer"

// NewDatabasePageSize is the page size of a SQLite database the store
// creates (SQLite's default is 4,096). A commit writes each page it
// changed to the WAL, one system call for the page and one for its frame
// header, and a step of the engine changes status rows, events and runs
// side by side: with pages of 16 KiB, the same benchmark made 21,118
// writes instead of 50,641 and 4,541 reads instead of 12,402. A database
// created before keeps its page size (VACUUM would change it, rewriting
// the whole file; the store never does that by itself).
const NewDatabasePageSize = 16384

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
		if err := newDatabasePageSize(c); err != nil {
			return err
		}
		_, err := c.Exec(`PRAGMA temp_store = MEMORY`, nil)
		return err
	}})
}

// newDatabasePageSize gives an empty database (no table yet) pages of
// NewDatabasePageSize bytes. The connection is in WAL mode already (the
// DSN's _journal_mode, which wrote the database's first page), where
// SQLite keeps the page size: it leaves WAL mode, sets the size, rewrites
// the empty database with it (VACUUM of nothing) and goes back.
func newDatabasePageSize(c *sqlite3.SQLiteConn) error {
	rows, err := c.Query(`SELECT COUNT(*) FROM sqlite_schema`, nil)
	if err != nil {
		return err
	}
	v := make([]driver.Value, 1)
	err = rows.Next(v)
	rows.Close()
	if err != nil {
		return err
	}
	if n, _ := v[0].(int64); n != 0 {
		return nil
	}
	// Best effort: another process opening the new database at the same
	// time may hold it (leaving WAL mode needs it alone); the database then
	// keeps SQLite's page size, and the connection stays in WAL mode.
	if _, err := c.Exec(`PRAGMA journal_mode = DELETE`, nil); err != nil {
		return nil
	}
	_, _ = c.Exec(`PRAGMA page_size = `+strconv.Itoa(NewDatabasePageSize), nil)
	_, _ = c.Exec(`VACUUM`, nil)
	_, err = c.Exec(`PRAGMA journal_mode = WAL`, nil)
	return err
}
