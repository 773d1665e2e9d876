package db

import (
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
