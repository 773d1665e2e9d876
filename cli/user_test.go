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
	resp, err := session.Get(env.URL + "/admin/users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
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
