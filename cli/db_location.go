package cli

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/db"
)

// dbFlagUsage is the help of every --db flag.
const dbFlagUsage = "SQLite database file, or a PostgreSQL URL postgres://user:password@host:5432/dbname (env TESSERA_DB)"

// dbLocation reads a --db value (db.ParseLocation), wording a refusal as a
// usage error (exit 2) that says which forms are accepted.
func dbLocation(value string) (db.Location, error) {
	loc, err := db.ParseLocation(value)
	var le *db.LocationError
	if !errors.As(err, &le) {
		return loc, err
	}
	switch le.Problem {
	case db.LocationEmpty:
		return loc, usageErr("--db is empty: give a SQLite database file (data/tessera.db) or a PostgreSQL URL (postgres://user@host:5432/dbname)")
	case db.LocationUnsupportedScheme:
		return loc, usageErr("--db: Tessera does not speak %q databases; give a SQLite database file (data/tessera.db) or a PostgreSQL URL (postgres:// or postgresql://, for example postgres://user@host:5432/dbname)", le.Scheme+"://")
	case db.LocationKeywordString:
		return loc, usageErr("--db looks like a PostgreSQL keyword/value connection string (host=… dbname=…), which Tessera does not read (it would be taken for a SQLite file of that name); give it as a URL: %s (add the password as postgres://user:password@host:port/dbname); nothing was written", le.Suggest)
	case db.LocationPostgresEmpty:
		return loc, usageErr("--db: the PostgreSQL URL names no host nor database; the form is postgres://user@host:5432/dbname")
	default:
		return loc, usageErr("--db: malformed PostgreSQL connection string: %s; the form is postgres://user:password@host:5432/dbname?sslmode=disable", le.Reason)
	}
}

// openLocation opens the store at loc, wording a PostgreSQL server that
// cannot be reached (exit 3).
func openLocation(loc db.Location) (*db.Store, error) {
	s, err := db.OpenLocation(loc, db.Options{})
	if err == nil {
		return s, nil
	}
	var tooNew *db.SchemaTooNewError
	if errors.As(err, &tooNew) {
		return nil, &exitError{ExitServer, fmt.Errorf("the database at %s has schema version %d, newer than this tessera's newest migration %d: a newer tessera migrated it; run that version (or newer) of tessera against it; nothing was written",
			loc.Redacted(), tooNew.Database, tooNew.Binary)}
	}
	var ue *db.UnreachableError
	if errors.As(err, &ue) {
		if msg := refusedConnection(ue, "--db"); msg != "" {
			return nil, &exitError{ExitServer, errors.New(msg)}
		}
		return nil, &exitError{ExitServer, errors.New(unreachableMessage(ue, loc, "--db"))}
	}
	return nil, &exitError{ExitServer, err}
}

// refusedConnection words a connection the PostgreSQL server answered but
// refused, from its SQLSTATE: no such database, or the user's
// authentication; "" for any other failure. flag names the setting to fix.
func refusedConnection(ue *db.UnreachableError, flag string) string {
	server, user, database := ue.Target()
	if server == "" {
		return ""
	}
	switch ue.SQLState() {
	case "3D000": // invalid_catalog_name
		return fmt.Sprintf("database %s does not exist on %s: create it (CREATE DATABASE %s) or fix %s", database, server, database, flag)
	case "28P01": // invalid_password
		return fmt.Sprintf("PostgreSQL on %s refused user %s: password authentication failed; fix the password in %s (postgres://user:password@host:port/dbname)", server, user, flag)
	case "28000": // invalid_authorization_specification
		return fmt.Sprintf("PostgreSQL on %s does not let user %s connect to database %s (pg_hba.conf, or no such role): allow it on the server or fix %s", server, user, database, flag)
	}
	return ""
}

// unreachableMessage words a PostgreSQL server at loc that did not answer
// (given by flag): what failed, once, and what to check for that failure.
func unreachableMessage(ue *db.UnreachableError, loc db.Location, flag string) string {
	server, _, _ := ue.Target()
	if server == "" {
		server = "this address"
	}
	head := "cannot reach PostgreSQL at " + loc.Redacted()
	switch ue.Failure() {
	case db.FailureRefused:
		return fmt.Sprintf("%s: connection refused at %s; check that the server runs and listens at this host and port (listen_addresses and port in postgresql.conf), or fix them in %s", head, server, flag)
	case db.FailureTimeout:
		return fmt.Sprintf("%s: no answer from %s after %s; check that the server runs, and that nothing between here and there (a firewall) drops the connection, or fix the host and port in %s", head, server, ue.After.Round(100*time.Millisecond), flag)
	case db.FailureNoHost:
		host, _, _ := net.SplitHostPort(server)
		return fmt.Sprintf("%s: cannot resolve the host name %s; fix it in %s (or this machine's DNS)", head, host, flag)
	}
	return fmt.Sprintf("%s: %s; check that the server runs, accepts connections at this address and knows this user and database", head, ue.Cause())
}

// dbFlag adds --db (env TESSERA_DB) to an administrative command.
func dbFlag(cmd *cobra.Command, path *string) {
	cmd.PersistentFlags().StringVar(path, "db", envOr("TESSERA_DB", "data/tessera.db"), dbFlagUsage)
}
