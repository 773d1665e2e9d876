package cli_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// TestCLIUserSetPassword: `tessera user set-password` replaces a password
// against --db (the way back in when the first admin's password, printed
// once, is lost): the new one signs in on the running server, the old one no
// longer does, and the account's sessions are signed out.
func TestCLIUserSetPassword(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.CreateUser(t, "root", auth.RoleAdmin, testkit.TestPassword)
	session := env.Login(t, "root", testkit.TestPassword)

	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("a brand new password\n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	for _, b := range []struct {
		args []string
		want string
	}{
		{[]string{"user", "set-password", "nobody", "--password-file", pw}, "no user named"},
		{[]string{"user", "set-password", "root", "--password-file", short}, "too short"},
		{[]string{"user", "set-password", "root", "--password-file", filepath.Join(dir, "missing")}, "--password-file"},
	} {
		if code, _, errs := run(t, append(b.args, "--db", env.Store.Path)...); code != cli.ExitUsage || !strings.Contains(errs, b.want) {
			t.Errorf("%v: exit %d %q, want %d with %q", b.args, code, errs, cli.ExitUsage, b.want)
		}
	}
	env.Login(t, "root", testkit.TestPassword) // bad input changed nothing

	code, out, errs := run(t, "user", "set-password", "root", "--password-file", pw, "--db", env.Store.Path)
	if code != 0 || !strings.Contains(out, "set the password of root") {
		t.Fatalf("set-password: %d %q %q", code, out, errs)
	}
	env.Login(t, "root", "a brand new password")
	resp := env.SessionPost(t, env.Anon(), "/login", url.Values{"name": {"root"}, "password": {testkit.TestPassword}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatal("the old password still signs in")
	}
	resp = testkit.GetNoBody(t, session, env.URL+"/admin/users")
	if resp.StatusCode == http.StatusOK {
		t.Fatal("the session signed in with the old password still works")
	}
}

// TestCLIUserUnlock: `tessera user unlock NAME` against --db lifts the lock
// that failed sign-ins put on an account of a running server, at once; an
// unknown name is a usage error that changes nothing.
func TestCLIUserUnlock(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 3, Window: time.Hour}, FailureDelay: -1}})
	env.CreateUser(t, "ivy", auth.RoleViewer, testkit.TestPassword)
	signIn := func(pw string) int {
		r := env.SessionPost(t, env.Anon(), "/login", url.Values{"name": {"ivy"}, "password": {pw}})
		r.Body.Close()
		return r.StatusCode
	}
	for range 3 {
		signIn("wrong password!")
	}
	if st := signIn(testkit.TestPassword); st != http.StatusTooManyRequests {
		t.Fatalf("locked account: %d", st)
	}
	if code, _, errs := run(t, "user", "unlock", "nobody", "--db", env.Store.Path); code != cli.ExitUsage || !strings.Contains(errs, "no user named") {
		t.Fatalf("unlock of an unknown user: exit %d %q", code, errs)
	}
	if st := signIn(testkit.TestPassword); st != http.StatusTooManyRequests {
		t.Fatalf("a refused unlock lifted the lock: %d", st)
	}
	code, out, errs := run(t, "user", "unlock", "IVY", "--db", env.Store.Path)
	if code != 0 || !strings.Contains(out, "unlocked ivy (forgot 3 failed sign-ins)") {
		t.Fatalf("unlock: exit %d %q %q", code, out, errs)
	}
	if st := signIn(testkit.TestPassword); st != http.StatusSeeOther {
		t.Fatalf("sign-in after the unlock: %d", st)
	}
	evs, err := env.Store.EventsBySubject(context.Background(), "user:ivy", 10)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range evs {
		seen = append(seen, e.Type+"/"+e.Actor)
	}
	if s := strings.Join(seen, " "); !strings.Contains(s, "user.unlocked/cli") || !strings.Contains(s, "login.locked_out/") {
		t.Fatalf("events of ivy: %s", s)
	}
}

// TestCLIUserCommands: add, list, set-role, disable with exit codes and
// clear errors; bad input writes nothing.
func TestCLIUserCommands(t *testing.T) {
	t.Parallel()
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

// TestCLISaysWhenNoAdminIsLeft: the host's CLI may demote or disable the
// last enabled admin (the dashboard never lets an admin do it to itself);
// it does so, and says that nobody can manage accounts in the dashboard
// until an admin is given back, and how. With another admin left, it says
// nothing of the kind.
func TestCLISaysWhenNoAdminIsLeft(t *testing.T) {
	t.Parallel()
	dbp, pw := accountsDB(t)
	for _, name := range []string{"root", "alice"} {
		if code, _, errs := run(t, "user", "add", name, "--role", "admin", "--password-file", pw, "--db", dbp); code != 0 {
			t.Fatalf("user add %s: %d %q", name, code, errs)
		}
	}
	const note = "no enabled admin account is left"
	if code, out, _ := run(t, "user", "set-role", "alice", "viewer", "--db", dbp); code != 0 || strings.Contains(out, note) {
		t.Fatalf("demoting one of two admins: %d %q", code, out)
	}
	for _, step := range []struct {
		args []string
		done string
	}{
		{[]string{"user", "disable", "root"}, "disabled root"},
		{[]string{"user", "enable", "root"}, "enabled root"},
		{[]string{"user", "set-role", "root", "operator"}, "root is now operator"},
	} {
		code, out, _ := run(t, append(step.args, "--db", dbp)...)
		last := step.done == "enabled root"
		if code != 0 || !strings.Contains(out, step.done) || strings.Contains(out, note) == last {
			t.Errorf("%v: exit %d %q; want %q and the note %v", step.args, code, out, step.done, !last)
		}
		if !last && !strings.Contains(out, "tessera user set-role NAME admin") {
			t.Errorf("%v: the note does not say how to give an admin back: %q", step.args, out)
		}
	}
}
