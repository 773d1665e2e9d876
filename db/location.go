package db

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Dialect is the SQL database a store speaks: SQLite (the embedded
// default, one file) or PostgreSQL (several instances on one database).
type Dialect int

const (
	// SQLite is a database file, opened through mattn/go-sqlite3.
	SQLite Dialect = iota
	// Postgres is a PostgreSQL database, opened through pgx v5's
	// database/sql driver.
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Location is where a store lives, as given to --db (or TESSERA_DB): a
// postgres:// or postgresql:// URL is a PostgreSQL database, anything that
// is not a URL a SQLite file.
type Location struct {
	Dialect Dialect
	// Path is the SQLite file (SQLite only).
	Path string
	// URL is the connection string as given (Postgres only): it may hold a
	// password, so show Redacted instead.
	URL string
}

// Redacted is the location to show a person or a log: the SQLite path, or
// the PostgreSQL URL without its password (in the userinfo or the query).
func (l Location) Redacted() string {
	if l.Dialect != Postgres {
		return l.Path
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return "postgres://…"
	}
	// pgx also reads a password from the query (?password=…, and the
	// client key's ?sslpassword=…): hide those as url.Redacted hides the
	// userinfo's.
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, k := range []string{"password", "sslpassword"} {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// LocationProblem says what is wrong with a --db value.
type LocationProblem int

const (
	// LocationEmpty: no value at all.
	LocationEmpty LocationProblem = iota + 1
	// LocationUnsupportedScheme: a URL of a scheme Tessera does not speak.
	LocationUnsupportedScheme
	// LocationMalformed: a postgres:// URL that does not parse.
	LocationMalformed
	// LocationKeywordString: a PostgreSQL keyword/value connection string
	// (host=… dbname=…), which Tessera does not take (it would be a file
	// of that name); Suggest is the URL of the same settings.
	LocationKeywordString
	// LocationPostgresEmpty: a postgres:// URL that names neither a host
	// nor a database.
	LocationPostgresEmpty
)

// LocationError is a --db value ParseLocation refuses. It carries the
// facts (the problem, the scheme, the parser's reason), not a sentence:
// the command line words it.
type LocationError struct {
	Problem LocationProblem
	// Scheme is the URL's scheme (LocationUnsupportedScheme).
	Scheme string
	// Reason is why the URL does not parse, password removed
	// (LocationMalformed).
	Reason string
	// Suggest is the postgres:// URL of a keyword/value string's settings,
	// without its password (LocationKeywordString).
	Suggest string
}

func (e *LocationError) Error() string {
	switch e.Problem {
	case LocationEmpty:
		return "database location is empty"
	case LocationUnsupportedScheme:
		return fmt.Sprintf("database URL scheme %q is not supported", e.Scheme)
	case LocationKeywordString:
		return "a PostgreSQL keyword/value connection string is not supported; use " + e.Suggest
	case LocationPostgresEmpty:
		return "the PostgreSQL URL names no host nor database"
	default:
		return "malformed PostgreSQL connection string: " + e.Reason
	}
}

// urlScheme matches the scheme of a URL (RFC 3986: a letter, then
// letters, digits, +, - and .) followed by "://".
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// ParseLocation reads a --db value. postgres:// and postgresql:// (any
// case) select PostgreSQL and must parse as a connection string; another
// scheme (mysql://…, file://…) is refused; "postgres:" or "postgresql:"
// without the slashes is a malformed PostgreSQL URL rather than a file;
// anything else is the path of a SQLite file.
func ParseLocation(s string) (Location, error) {
	if strings.TrimSpace(s) == "" {
		return Location{}, &LocationError{Problem: LocationEmpty}
	}
	lower := strings.ToLower(s)
	isPG := strings.HasPrefix(lower, "postgres:") || strings.HasPrefix(lower, "postgresql:")
	if m := urlScheme.FindStringSubmatch(s); m != nil && !isPG {
		return Location{}, &LocationError{Problem: LocationUnsupportedScheme, Scheme: m[1]}
	}
	if !isPG {
		if kv, ok := keywordSettings(s); ok {
			return Location{}, &LocationError{Problem: LocationKeywordString, Suggest: kv}
		}
		return Location{Dialect: SQLite, Path: s}, nil
	}
	m := urlScheme.FindStringSubmatch(s)
	if m == nil {
		return Location{}, &LocationError{Problem: LocationMalformed, Reason: `expected "postgres://" at the start`}
	}
	// pgx knows the scheme in lower case only (another string is read as
	// "key=value" settings).
	s = strings.ToLower(m[1]) + s[len(m[1]):]
	if _, err := pgconn.ParseConfig(s); err != nil {
		return Location{}, &LocationError{Problem: LocationMalformed, Reason: parseReason(err)}
	}
	if u, err := url.Parse(s); err == nil && u.Host == "" && strings.Trim(u.Path, "/") == "" && !u.Query().Has("host") && !u.Query().Has("dbname") {
		// pgx would fill in a socket, the OS user and its database: not
		// what anyone meant by it.
		return Location{}, &LocationError{Problem: LocationPostgresEmpty}
	}
	return Location{Dialect: Postgres, URL: s}, nil
}

// pgKeywords are libpq's connection keywords that name where to connect.
var pgKeywords = map[string]bool{"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "sslmode": true, "connect_timeout": true, "application_name": true}

// keywordSetting matches one key=value of a keyword/value string.
var keywordSetting = regexp.MustCompile(`^([a-z_]+)\s*=\s*(\S*)$`)

// keywordSettings says whether s reads as a PostgreSQL keyword/value
// connection string (every space-separated word a key=value, at least one
// key libpq's), and returns the postgres:// URL of its host, port, user,
// database (the password left out, placeholders where missing).
func keywordSettings(s string) (string, bool) {
	words := strings.Fields(strings.ReplaceAll(s, " = ", "="))
	kv := map[string]string{}
	known := false
	for _, w := range words {
		m := keywordSetting.FindStringSubmatch(w)
		if m == nil {
			return "", false
		}
		kv[m[1]] = strings.Trim(m[2], "'")
		known = known || pgKeywords[m[1]]
	}
	if !known {
		return "", false
	}
	or := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	u := url.URL{Scheme: "postgres", Host: or(kv["host"], or(kv["hostaddr"], "host")) + ":" + or(kv["port"], "5432"), Path: "/" + or(kv["dbname"], "dbname")}
	u.User = url.User(or(kv["user"], "user"))
	if m := kv["sslmode"]; m != "" {
		u.RawQuery = "sslmode=" + url.QueryEscape(m)
	}
	return u.String(), true
}

// parseReason is pgconn's reason for refusing a connection string, without
// the string itself (it may hold a password).
func parseReason(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return redactURLError(err).Error()
	}
	// "cannot parse `<string>`: <reason> (<inner error>)": the reason, and
	// the inner error without the URL it may quote.
	full := pe.Error()
	if i := strings.Index(full, "`: "); i >= 0 {
		full = full[i+3:]
	}
	if inner := pe.Unwrap(); inner != nil {
		full = strings.TrimSuffix(full, " ("+inner.Error()+")") + " (" + redactURLError(inner).Error() + ")"
	}
	return full
}

// redactURLError drops the URL from a *url.Error (url.Parse's errors quote
// the whole string, password included).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
