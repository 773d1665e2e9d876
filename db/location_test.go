package db

import (
	"errors"
	"strings"
	"testing"
)

// TestLocationRedactedHidesPasswords: a password in the URL's userinfo or
// in its query (pgx reads both) never reaches a message or a log line.
func TestLocationRedactedHidesPasswords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"postgres://u:secretpw@h:5432/d", "postgres://u:xxxxx@h:5432/d"},
		{"postgres://u@h:5432/d?password=secretpw", "postgres://u@h:5432/d?password=xxxxx"},
		{"postgresql://u@h/d?sslmode=require&sslpassword=secretpw", "postgresql://u@h/d?sslmode=require&sslpassword=xxxxx"},
		{"postgres://u@h/d?sslmode=disable", "postgres://u@h/d?sslmode=disable"},
	} {
		loc, err := ParseLocation(tc.url)
		if err != nil {
			t.Fatalf("ParseLocation(%q): %v", tc.url, err)
		}
		got := loc.Redacted()
		if strings.Contains(got, "secretpw") || got != tc.want {
			t.Errorf("Redacted(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// TestParseLocationRefusesKeywordStrings: a PostgreSQL keyword/value
// connection string is refused with the URL of its settings (password
// left out), not taken for a SQLite file; a postgres:// URL naming no host
// nor database is refused; file names with an = stay files.
func TestParseLocationRefusesKeywordStrings(t *testing.T) {
	t.Parallel()
	for in, suggest := range map[string]string{
		"host=127.0.0.1 port=5432 user=postgres dbname=t1":      "postgres://postgres@127.0.0.1:5432/t1",
		"host=db.example user=u password=s3cret dbname=tessera": "postgres://u@db.example:5432/tessera",
		"dbname=t1": "postgres://user@host:5432/t1",
		"host = h port = 6543 dbname = d sslmode=require user='me'": "postgres://me@h:6543/d?sslmode=require",
	} {
		_, err := ParseLocation(in)
		var le *LocationError
		if !errors.As(err, &le) || le.Problem != LocationKeywordString || le.Suggest != suggest {
			t.Errorf("ParseLocation(%q) = %v, want a keyword string refused suggesting %s", in, err, suggest)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseLocation(%q): the error shows the password: %v", in, err)
		}
	}
	for _, in := range []string{"postgres://", "postgresql:///", "postgres://?sslmode=disable"} {
		_, err := ParseLocation(in)
		var le *LocationError
		if !errors.As(err, &le) || le.Problem != LocationPostgresEmpty {
			t.Errorf("ParseLocation(%q) = %v, want refused as naming no host nor database", in, err)
		}
	}
	for _, in := range []string{"data/tessera.db", "a=b.db", "runs/x=1/t.db", "postgres:///tessera", "postgres://h"} {
		if _, err := ParseLocation(in); err != nil {
			t.Errorf("ParseLocation(%q) = %v, want it accepted", in, err)
		}
	}
}
