package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/db"
)

// moveToPostgres is `tessera migrate --from sqlite.db --to postgres://…`:
// it checks both flags, moves the database (db.MoveToPostgres) and words
// its refusals.
func moveToPostgres(cmd *cobra.Command, from, to string) error {
	const toForm = "postgres://user:password@host:5432/dbname"
	if strings.TrimSpace(from) == "" {
		return usageErr("--from is empty: give the SQLite database file to move (the --db that tessera serve used, for example data/tessera.db)")
	}
	if strings.TrimSpace(to) == "" {
		return usageErr("--to is empty: give the PostgreSQL database to move to, %s", toForm)
	}
	dst, err := db.ParseLocation(to)
	var le *db.LocationError
	switch {
	case errors.As(err, &le) && le.Problem == db.LocationMalformed:
		return usageErr("--to: malformed PostgreSQL connection string: %s; the form is %s?sslmode=disable", le.Reason, toForm)
	case errors.As(err, &le) && le.Problem == db.LocationUnsupportedScheme:
		return usageErr("--to must be a postgres:// URL (%s); Tessera does not speak %q databases", toForm, le.Scheme+"://")
	case err != nil:
		return usageErr("--to: %v", err)
	case dst.Dialect != db.Postgres:
		return usageErr("--to must be a postgres:// URL (%s), not the file %q: migrate --from --to moves a SQLite database to PostgreSQL (to copy a SQLite file, use sqlite3's .backup)", toForm, to)
	}
	src, err := db.ParseLocation(from)
	switch {
	case errors.As(err, &le) && le.Problem == db.LocationUnsupportedScheme:
		return usageErr("--from must be a SQLite database file, not a %q URL", le.Scheme+"://")
	case err != nil || src.Dialect == db.Postgres:
		return usageErr("--from must be a SQLite database file (for example data/tessera.db), not a PostgreSQL URL: the move goes from SQLite to PostgreSQL (between two PostgreSQL databases, use pg_dump)")
	}

	out := cmd.OutOrStdout()
	rep, err := db.MoveToPostgres(cmd.Context(), src.Path, dst, db.MoveOptions{
		Progress: func(t db.MovedTable) { sayf(out, "copied %-22s %d rows\n", t.Name, t.Rows) },
	})
	if err != nil {
		return moveError(err, src, dst)
	}
	var rows int64
	for _, t := range rep.Tables {
		rows += t.Rows
	}
	sayf(out, "moved %d rows in %d tables from %s to %s (schema version %d); %d id sequences continue past the copied ids\n",
		rows, len(rep.Tables), src.Path, dst.Redacted(), rep.Version, rep.Sequences)
	sayf(out, "serve from it with --db %s (or TESSERA_DB) and TESSERA_SESSION_KEYS", dst.Redacted())
	if _, err := os.Stat(src.Path + ".session-key"); err == nil {
		sayf(out, "; TESSERA_SESSION_KEYS=$(cat %s.session-key) keeps everyone signed in", src.Path)
	}
	sayln(out)
	return nil
}

// moveError words a refusal or failure of db.MoveToPostgres: bad input is
// a usage error (exit 2), the rest (a --to database a newer tessera
// migrated too) exit 3.
func moveError(err error, src, dst db.Location) error {
	var ue *db.UnreachableError
	if errors.As(err, &ue) {
		if msg := refusedConnection(ue, "--to"); msg != "" {
			return &exitError{ExitServer, fmt.Errorf("%s; nothing was written", msg)}
		}
		return &exitError{ExitServer, fmt.Errorf("--to: %s; nothing was written", unreachableMessage(ue, dst, "--to"))}
	}
	var me *db.MoveError
	if !errors.As(err, &me) {
		return &exitError{ExitServer, fmt.Errorf("moving %s to %s: %w", src.Path, dst.Redacted(), err)}
	}
	const serveDB = "give the database file that tessera serve --db used (default data/tessera.db)"
	switch me.Problem {
	case db.MoveSourceMissing:
		return usageErr("--from %s: no such file; %s", me.Path, serveDB)
	case db.MoveSourceNotSQLite:
		return usageErr("--from %s is not a SQLite database file; %s", me.Path, serveDB)
	case db.MoveSourceNotTessera:
		return usageErr("--from %s is a SQLite database without Tessera's schema (no tessera ever ran on it); %s", me.Path, serveDB)
	case db.MoveSourceNewer:
		return usageErr("--from %s has schema version %d, newer than this tessera's %d: move it with the tessera that wrote it (or a newer one); nothing was written", me.Path, me.Version, me.Binary)
	case db.MoveSourceInUse:
		return usageErr("--from %s is in use: a tessera serve on it heartbeated %s ago (worker %s); stop it first, so that nothing it writes after the copy is lost, and move again (a server that crashed stops counting after %s); nothing was written", me.Path, me.Ago, me.Owner, db.SourceInUseWithin)
	case db.MoveTargetNewer:
		// Exit 3, as serve and migrate --db for a database a newer
		// tessera migrated.
		return &exitError{ExitServer, fmt.Errorf("--to %s has schema version %d, newer than this tessera's %d: use the tessera that wrote it (or a newer one), or an empty database; nothing was written", dst.Redacted(), me.Version, me.Binary)}
	case db.MoveTargetNotEmpty:
		return usageErr("--to %s already holds data (table %s has rows); nothing was written: move into an empty database (CREATE DATABASE tessera; or createdb tessera), or drop this one's tables if its data may go", dst.Redacted(), me.Table)
	case db.MoveSchemaMismatch:
		return &exitError{ExitServer, fmt.Errorf("%v; nothing was copied: this tessera's SQLite and PostgreSQL migrations disagree, please report it", me)}
	default:
		return &exitError{ExitServer, fmt.Errorf("copying table %s failed: %v; the transaction was rolled back and %s holds none of the rows (its empty schema stays: once the cause is fixed, run the move again)", me.Table, me.Err, dst.Redacted())}
	}
}
