package db

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// Moving a SQLite database to PostgreSQL (tessera migrate --from --to).
// Both databases are first brought to this binary's schema by their own
// migrations; then every table of the schema (read from the databases'
// catalogs, never a list kept by hand) is copied in the order of its
// foreign keys, all of it in ONE PostgreSQL transaction that also resets
// the identity sequences past the copied ids: a failure leaves the
// PostgreSQL database without a single copied row. Everything that can be
// refused (a missing or foreign source, a newer schema, a target holding
// rows) is refused before anything is written to either database.

// MovedTable is one table copied: its name and its rows.
type MovedTable struct {
	Name string
	Rows int64
}

// MoveReport is what MoveToPostgres did.
type MoveReport struct {
	// Version is the schema version both databases are at.
	Version int64
	// Tables are the tables copied, in the order they were copied.
	Tables []MovedTable
	// Sequences is the number of identity sequences reset.
	Sequences int
}

// MoveOptions tune MoveToPostgres.
type MoveOptions struct {
	// Progress, if set, is told each table once it is copied.
	Progress func(MovedTable)
	// failAfter, in tests, makes the copy fail once this table is copied
	// (the rollback's test).
	failAfter string
}

// sqliteMagic is the first 16 bytes of every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// MoveToPostgres copies the SQLite database at from into the PostgreSQL
// database at to (a postgres:// Location). A refusal or failure is a
// *MoveError (or an *UnreachableError when PostgreSQL does not answer).
func MoveToPostgres(ctx context.Context, from string, to Location, opt MoveOptions) (MoveReport, error) {
	var rep MoveReport
	if to.Dialect != Postgres {
		return rep, errors.New("MoveToPostgres: the target is not a PostgreSQL location")
	}
	binary, err := BinaryVersion()
	if err != nil {
		return rep, err
	}
	if err := checkMoveSource(from, binary); err != nil {
		return rep, err
	}
	if err := checkMoveTarget(ctx, to.URL, binary); err != nil {
		return rep, err
	}

	// Nothing refused: bring both to this binary's schema.
	src, err := OpenLocation(Location{Dialect: SQLite, Path: from}, Options{})
	if err != nil {
		return rep, err
	}
	rep.Version, err = src.MigrationVersion()
	src.Close()
	if err != nil {
		return rep, err
	}
	if err := migratePostgres(to.URL); err != nil {
		return rep, err
	}

	return copyToPostgres(ctx, from, to.URL, rep, opt)
}

// BinaryVersion is the schema version this binary's migrations bring a
// database to.
func BinaryVersion() (int64, error) {
	d, err := sql.Open(driverName, ":memory:") // never connected: the provider only lists
	if err != nil {
		return 0, err
	}
	defer d.Close()
	var top int64
	for _, dialect := range []Dialect{SQLite, Postgres} {
		p, err := migrator(d, dialect)
		if err != nil {
			return 0, err
		}
		for _, s := range p.ListSources() {
			top = max(top, s.Version)
		}
	}
	return top, nil
}

// checkMoveSource refuses a source that is missing, not SQLite, not
// Tessera's, or of a newer schema, without writing to it.
func checkMoveSource(path string, binary int64) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &MoveError{Problem: MoveSourceMissing, Path: path}
	}
	if err != nil {
		return &MoveError{Problem: MoveSourceNotSQLite, Path: path, Err: err}
	}
	head := make([]byte, len(sqliteMagic))
	_, err = io.ReadFull(f, head)
	st, _ := f.Stat()
	f.Close()
	if st != nil && st.IsDir() {
		return &MoveError{Problem: MoveSourceNotSQLite, Path: path, Err: errors.New("a directory")}
	}
	if err != nil || !bytes.Equal(head, sqliteMagic) {
		return &MoveError{Problem: MoveSourceNotSQLite, Path: path}
	}
	d, err := sql.Open(driverName, sourceDSN(path))
	if err != nil {
		return err
	}
	defer d.Close()
	var n int
	if err := d.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`).Scan(&n); err != nil {
		return &MoveError{Problem: MoveSourceNotSQLite, Path: path, Err: err}
	}
	if n == 0 {
		return &MoveError{Problem: MoveSourceNotTessera, Path: path}
	}
	var v sql.NullInt64
	if err := d.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&v); err != nil {
		return err
	}
	if v.Int64 > binary {
		return &MoveError{Problem: MoveSourceNewer, Path: path, Version: v.Int64, Binary: binary}
	}
	// A server that still runs on the file writes after the copy's
	// snapshot: what it writes then would be lost.
	var owner string
	var beat int64
	err = d.QueryRow(`SELECT owner, heartbeat_at FROM workers ORDER BY heartbeat_at DESC LIMIT 1`).Scan(&owner, &beat)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if ago := time.Since(FromMillis(beat)); err == nil && ago < SourceInUseWithin {
		return &MoveError{Problem: MoveSourceInUse, Path: path, Owner: owner, Ago: max(ago, 0).Round(time.Millisecond)}
	}
	return nil
}

// SourceInUseWithin: a SQLite database a server heartbeated in less than
// this long ago is in use (servers heartbeat every second or so, and
// remove their row when they stop).
const SourceInUseWithin = 15 * time.Second

// sourceDSN opens the SQLite source for reading only, its transactions
// deferred (a read transaction is a snapshot of the whole file).
func sourceDSN(path string) string {
	return "file:" + path + "?_query_only=true&_txlock=deferred&_busy_timeout=10000&_foreign_keys=on"
}

// connectTarget opens one plain pgx connection to the target (no
// rebinding of ? placeholders: the copy's statements are PostgreSQL's).
func connectTarget(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := utcConfig(url)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := connectOne(ctx, cfg, nil)
	if err != nil {
		return nil, &UnreachableError{Err: err, After: time.Since(start)}
	}
	return c, nil
}

// checkMoveTarget refuses a PostgreSQL database of a newer schema, or one
// a table of which holds a row (goose's version table aside), without
// writing to it.
func checkMoveTarget(ctx context.Context, url string, binary int64) error {
	c, err := connectTarget(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	tables, err := pgTables(ctx, c)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if t == gooseTable {
			var v *int64
			if err := c.QueryRow(ctx, `SELECT MAX(version_id) FROM goose_db_version`).Scan(&v); err != nil {
				return err
			}
			if v != nil && *v > binary {
				return &MoveError{Problem: MoveTargetNewer, Version: *v, Binary: binary}
			}
		}
	}
	return pgEmpty(ctx, c, tables)
}

// pgEmpty answers a MoveTargetNotEmpty for the first of tables (goose's
// aside) that holds a row.
func pgEmpty(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tables []string) error {
	for _, t := range tables {
		if t == gooseTable {
			continue
		}
		var found bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&found); err != nil {
			return err
		}
		if found {
			return &MoveError{Problem: MoveTargetNotEmpty, Table: t}
		}
	}
	return nil
}

// copyToPostgres copies every table in one transaction of the target.
func copyToPostgres(ctx context.Context, from, url string, rep MoveReport, opt MoveOptions) (MoveReport, error) {
	src, err := sql.Open(driverName, sourceDSN(from))
	if err != nil {
		return rep, err
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	dst, err := connectTarget(ctx, url)
	if err != nil {
		return rep, err
	}
	defer dst.Close(context.Background())

	plan, err := planMove(ctx, src, dst)
	if err != nil {
		return rep, err
	}

	// One snapshot of the source, one transaction of the target.
	stx, err := src.BeginTx(ctx, nil)
	if err != nil {
		return rep, err
	}
	defer stx.Rollback() //nolint:errcheck // read only
	tx, err := dst.Begin(ctx)
	if err != nil {
		return rep, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit, a no-op
	// No instance writes the target while it fills (an instance started
	// on it too early waits), and it is still empty now that it is ours.
	if _, err := tx.Exec(ctx, `LOCK TABLE `+identList(plan.order)+` IN EXCLUSIVE MODE`); err != nil {
		return rep, err
	}
	if err := pgEmpty(ctx, tx, plan.order); err != nil {
		return rep, err
	}
	for _, t := range plan.order {
		n, err := copyTable(ctx, stx, tx, t, plan.columns[t])
		if err == nil && opt.failAfter == t {
			err = errors.New("failing on purpose after this table (test)")
		}
		if err != nil {
			return rep, &MoveError{Problem: MoveCopyFailed, Table: t, Err: err}
		}
		mt := MovedTable{Name: t, Rows: n}
		rep.Tables = append(rep.Tables, mt)
		if opt.Progress != nil {
			opt.Progress(mt)
		}
	}
	if rep.Sequences, err = resetSequences(ctx, stx, tx); err != nil {
		return rep, &MoveError{Problem: MoveCopyFailed, Table: "(identity sequences)", Err: err}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return rep, &MoveError{Problem: MoveCopyFailed, Table: "(commit)", Err: err}
	}
	return rep, nil
}
