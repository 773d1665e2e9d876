package db

import (
	"fmt"
	"strings"
	"time"
)

// MoveProblem says why MoveToPostgres refused or stopped.
type MoveProblem int

const (
	// MoveSourceMissing: the SQLite file does not exist.
	MoveSourceMissing MoveProblem = iota + 1
	// MoveSourceNotSQLite: the file is not a SQLite database.
	MoveSourceNotSQLite
	// MoveSourceNotTessera: a SQLite database without Tessera's schema
	// (no migration has ever run on it).
	MoveSourceNotTessera
	// MoveSourceNewer: the SQLite database's schema is newer than this
	// binary's (Version, Binary).
	MoveSourceNewer
	// MoveSourceInUse: a server heartbeated in the SQLite database a
	// moment ago (Owner, Ago): it still runs on it.
	MoveSourceInUse
	// MoveTargetNewer: the PostgreSQL database's schema is newer than this
	// binary's (Version, Binary).
	MoveTargetNewer
	// MoveTargetNotEmpty: a table of the PostgreSQL database holds rows
	// (Table).
	MoveTargetNotEmpty
	// MoveSchemaMismatch: the two schemas, at the same version, do not
	// have the same tables (OnlySQLite, OnlyPostgres) or the same columns
	// of Table (OnlySQLite, OnlyPostgres are then columns), or a column of
	// a type the copy does not know (Table, Column, Type).
	MoveSchemaMismatch
	// MoveCopyFailed: copying Table failed (Err); the transaction was
	// rolled back, the PostgreSQL database holds none of the rows.
	MoveCopyFailed
)

// MoveError is a refusal or a failure of MoveToPostgres. It carries the
// facts, not a sentence: the command line words it.
type MoveError struct {
	Problem MoveProblem
	// Path is the SQLite file.
	Path string
	// Version is the schema version of the database refused; Binary this
	// binary's.
	Version, Binary int64
	// Table is the table concerned (MoveTargetNotEmpty, MoveSchemaMismatch
	// of columns, MoveCopyFailed).
	Table string
	// Column and Type: a column of a type the copy does not know.
	Column, Type string
	// OnlySQLite and OnlyPostgres: the tables (or, with Table, the columns)
	// that one schema has and the other lacks.
	OnlySQLite, OnlyPostgres []string
	// Owner is the worker that heartbeated, Ago how long ago
	// (MoveSourceInUse).
	Owner string
	Ago   time.Duration
	// Err is the underlying error (MoveCopyFailed, MoveSourceNotSQLite).
	Err error
}

func (e *MoveError) Error() string {
	switch e.Problem {
	case MoveSourceMissing:
		return fmt.Sprintf("SQLite database %s does not exist", e.Path)
	case MoveSourceNotSQLite:
		return fmt.Sprintf("%s is not a SQLite database", e.Path)
	case MoveSourceNotTessera:
		return fmt.Sprintf("%s holds no Tessera schema", e.Path)
	case MoveSourceNewer:
		return fmt.Sprintf("SQLite database %s has schema version %d, newer than this binary's %d", e.Path, e.Version, e.Binary)
	case MoveSourceInUse:
		return fmt.Sprintf("SQLite database %s is in use: server %s heartbeated %s ago", e.Path, e.Owner, e.Ago)
	case MoveTargetNewer:
		return fmt.Sprintf("PostgreSQL database has schema version %d, newer than this binary's %d", e.Version, e.Binary)
	case MoveTargetNotEmpty:
		return fmt.Sprintf("PostgreSQL database is not empty: table %s holds rows", e.Table)
	case MoveSchemaMismatch:
		what := "tables"
		if e.Table != "" {
			what = "columns of " + e.Table
		}
		if e.Column != "" {
			return fmt.Sprintf("column %s.%s has type %s, which the copy does not know", e.Table, e.Column, e.Type)
		}
		return fmt.Sprintf("schemas differ: %s only in SQLite [%s], only in PostgreSQL [%s]",
			what, strings.Join(e.OnlySQLite, ", "), strings.Join(e.OnlyPostgres, ", "))
	default:
		return fmt.Sprintf("copy table %s: %v", e.Table, e.Err)
	}
}

func (e *MoveError) Unwrap() error { return e.Err }
