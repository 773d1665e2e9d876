package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
)

func accountsDB(t *testing.T) (dbPath, pwFile string) {
	t.Helper()
	dir := t.TempDir()
	dbPath = filepath.Join(dir, "t.db")
	s, err := db.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	pwFile = filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("a long enough password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dbPath, pwFile
}

func userCount(t *testing.T, dbPath string) (users, tokens int) {
	t.Helper()
	s, err := db.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.RawReader().Get(&users, `SELECT COUNT(*) FROM users`)
	s.RawReader().Get(&tokens, `SELECT COUNT(*) FROM api_tokens`)
	return
}

// TestCLIUserCommands: add, list, set-role, disable with exit codes and
// clear errors; bad input writes nothing.
func TestCLIUserCommands(t *testing.T) {
	dbp, pw := accountsDB(t)
	if code, out, errs := run(t, "user", "add", "alice", "--role", "operator", "--password-file", pw, "--db", dbp); code != 0 || !strings.Contains(out, "created user alice (operator)") {
		t.Fatalf("user add: %d %q %q", code, out, errs)
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"user", "add", "alice", "--password-file", pw}, "already exists"},
		{[]string{"user", "add", "ALICE", "--password-file", pw}, `a user named "alice" already exists; user names are case-insensitive, so "ALICE" is the same name`},
		{[]string{"user", "add", "bob", "--role", "owner", "--password-file", pw}, "unknown role"},
		{[]string{"user", "add", "bob", "--password-file", short}, "too short"},
		{[]string{"user", "add", "bob", "--password-file", empty}, "empty"},
		{[]string{"user", "add", "bo b", "--password-file", pw}, "may only hold"},
		{[]string{"user", "set-role", "alice", "root"}, "unknown role"},
		{[]string{"user", "set-role", "nobody", "viewer"}, "no user named"},
		{[]string{"user", "disable", "nobody"}, "no user named"},
	}
	for _, b := range bad {
		code, _, errs := run(t, append(b.args, "--db", dbp)...)
		if code != cli.ExitUsage || !strings.Contains(errs, b.want) {
			t.Errorf("%v: exit %d %q, want %d with %q", b.args, code, errs, cli.ExitUsage, b.want)
		}
	}
	if u, _ := userCount(t, dbp); u != 1 {
		t.Fatalf("bad input wrote users: %d", u)
	}
	if code, out, _ := run(t, "user", "set-role", "alice", "admin", "--db", dbp); code != 0 || !strings.Contains(out, "alice is now admin") {
		t.Fatalf("set-role: %d %q", code, out)
	}
	if code, out, _ := run(t, "user", "disable", "alice", "--db", dbp); code != 0 || !strings.Contains(out, "disabled alice") {
		t.Fatalf("disable: %d %q", code, out)
	}
	code, out, _ := run(t, "user", "list", "--db", dbp)
	if code != 0 || !strings.Contains(out, "alice") || !strings.Contains(out, "admin") || !strings.Contains(out, "disabled") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, _ := run(t, "user", "list", "--json", "--db", dbp); code != 0 || !strings.Contains(out, `"name":"alice"`) {
		t.Fatalf("list --json: %d %q", code, out)
	}
	if code, _, errs := run(t, "user", "list", "--db", filepath.Join(t.TempDir(), "missing.db")); code != cli.ExitServer || !strings.Contains(errs, "missing.db") {
		t.Fatalf("missing database: %d %q", code, errs)
	}
}

// TestCLITokenCommands: create prints the token once (only its hash is
// stored), list never shows secrets, revoke stops it; bad input exits 2.
func TestCLITokenCommands(t *testing.T) {
	dbp, pw := accountsDB(t)
	run(t, "user", "add", "ci", "--role", "operator", "--password-file", pw, "--db", dbp)
	code, out, errs := run(t, "token", "create", "--user", "ci", "--name", "nightly", "--role", "viewer", "--db", dbp)
	secret := strings.TrimSpace(out)
	if code != 0 || !auth.WellFormedToken(secret) || !strings.Contains(errs, "shown only once") {
		t.Fatalf("token create: %d %q %q", code, out, errs)
	}
	s, err := db.Open(dbp)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.TokenByHash(context.Background(), auth.HashSecret(secret))
	s.Close()
	if err != nil || tok.Role == nil || *tok.Role != "viewer" || tok.Name != "nightly" {
		t.Fatalf("stored token: %+v %v", tok, err)
	}
	for _, b := range [][]string{
		{"token", "create", "--user", "ci", "--name", "x", "--role", "admin"},
		{"token", "create", "--user", "nobody", "--name", "x"},
		{"token", "create", "--user", "ci", "--name", ""},
		{"token", "create", "--name", "x"},
		{"token", "create", "--user", "ci", "--name", "x", "--role", "boss"},
		{"token", "revoke", "abc"},
		{"token", "revoke", "999"},
	} {
		if code, _, errs := run(t, append(b, "--db", dbp)...); code != cli.ExitUsage || errs == "" {
			t.Errorf("%v: exit %d %q", b, code, errs)
		}
	}
	// Without --name (or with a blank one), the error says how to fix it.
	for _, b := range [][]string{{"--user", "ci"}, {"--user", "ci", "--name", "  "}} {
		code, _, errs := run(t, append(append([]string{"token", "create"}, b...), "--db", dbp)...)
		if code != cli.ExitUsage || !strings.Contains(errs, "the token needs a name: add --name NAME") {
			t.Errorf("token create %v: exit %d %q", b, code, errs)
		}
	}
	if code, _, errs := run(t, "token", "create", "--user", "ci", "--name", "a\tb", "--db", dbp); code != cli.ExitUsage || !strings.Contains(errs, "--name: the token name holds control characters") {
		t.Errorf("token create --name with a tab: exit %d %q", code, errs)
	}
	if _, n := userCount(t, dbp); n != 1 {
		t.Fatalf("bad input wrote tokens: %d", n)
	}
	code, out, _ = run(t, "token", "list", "--db", dbp)
	if code != 0 || !strings.Contains(out, "nightly") || strings.Contains(out, secret) || !strings.Contains(out, "active") {
		t.Fatalf("token list: %d %q", code, out)
	}
	if code, out, _ := run(t, "token", "revoke", "1", "--db", dbp); code != 0 || !strings.Contains(out, "revoked token 1") {
		t.Fatalf("revoke: %d %q", code, out)
	}
	if _, out, _ := run(t, "token", "list", "--user", "ci", "--db", dbp); !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke: %q", out)
	}
}
