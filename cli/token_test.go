package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// TestTokenCreateExpires: `token create --expires` refuses a negative,
// zero, unparseable or absurdly long lifetime naming the flag, and creates
// nothing; a good one is listed under EXPIRES, and once past it the token
// is listed as expired.
func TestTokenCreateExpires(t *testing.T) {
	t.Parallel()
	dbPath := dbWithUser(t, "ci")
	for _, tc := range []struct{ value, want string }{
		{"-3d", "negative"},
		{"0s", "more than 0"},
		{"", "empty duration"},
		{"quarterly", `"quarterly" is not a duration`},
		{"90", "has no unit"},
		{"4000d", "longer than the most a token may live"},
		{"9999999999999h", "is not a duration"},
		{"1s", `"1s" is shorter than 1 minute, the least a token may live`},
		{"1ms", "shorter than 1 minute"},
	} {
		code, out, errOut := run(t, "token", "create", "--user", "ci", "--name", "x", "--expires", tc.value, "--db", dbPath)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--expires") || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("--expires %q: exit %d %q %q, want 2 naming --expires and saying %q", tc.value, code, out, errOut, tc.want)
		}
	}
	if _, out, _ := run(t, "token", "list", "--db", dbPath); strings.Count(out, "\n") != 1 {
		t.Fatalf("refused creates made tokens:\n%s", out)
	}
	code, _, errOut := run(t, "token", "create", "--user", "ci", "--name", "quarter", "--expires", "90d", "--db", dbPath)
	want := time.Now().Add(90 * 24 * time.Hour).UTC().Format("2006-01-02")
	if code != 0 || !strings.Contains(errOut, "it expires at "+want) {
		t.Fatalf("--expires 90d: exit %d %q", code, errOut)
	}
	// A token past its expiry (the least lifetime --expires gives is a
	// minute: this one is made in the store, expiring a second from now).
	s, err := db.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.UserByName(t.Context(), "ci")
	if err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(time.Second)
	if _, err := s.CreateToken(t.Context(), u.ID, "blink", "tsr_blink0", "blink-hash", "", &soon, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	testkit.Eventually(t, 30*time.Second, "the 1s token to be listed as expired", func() bool {
		_, out, _ := run(t, "token", "list", "--db", dbPath)
		var quarter, blink string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, " quarter ") {
				quarter = line
			}
			if strings.Contains(line, " blink ") {
				blink = line
			}
		}
		if !strings.Contains(out, "EXPIRES") || !strings.Contains(quarter, want) || !strings.HasSuffix(strings.TrimSpace(quarter), "active") {
			t.Fatalf("token list does not show the expiry of the 90d token:\n%s", out)
		}
		return strings.HasSuffix(strings.TrimSpace(blink), "expired")
	})
}

// TestCLITokenCommands: create prints the token once (only its hash is
// stored), list never shows secrets, revoke stops it; bad input exits 2.
func TestCLITokenCommands(t *testing.T) {
	t.Parallel()
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

// TestTokenRevokeUnknownIDSaysWhereToLook: `token revoke 9999` answered
// the store's "token 9999: not found", which says neither what is wrong in
// the user's words nor how to find the id; it now names the id and points
// at `tessera token list` (exit 2), and revokes nothing. An unknown --user
// points at `tessera user list`.
func TestTokenRevokeUnknownIDSaysWhereToLook(t *testing.T) {
	t.Parallel()
	dbPath := dbWithUser(t, "ci")
	if code, _, errOut := run(t, "token", "create", "--user", "ci", "--name", "keep", "--db", dbPath); code != 0 {
		t.Fatalf("token create: %s", errOut)
	}
	code, out, errOut := run(t, "token", "revoke", "9999", "--db", dbPath)
	if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "no token 9999") || !strings.Contains(errOut, "tessera token list") {
		t.Fatalf("revoke 9999: exit %d %q %q, want 2 saying no token 9999 and pointing at tessera token list", code, out, errOut)
	}
	if _, out, _ := run(t, "token", "list", "--db", dbPath); strings.Contains(out, "revoked") {
		t.Fatalf("a refused revoke revoked a token:\n%s", out)
	}
	// An unknown user likewise says where the names are.
	for _, args := range [][]string{{"token", "create", "--user", "nobody", "--name", "x"}, {"token", "list", "--user", "nobody"}} {
		code, out, errOut := run(t, append(args, "--db", dbPath)...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, `no user named "nobody"`) || !strings.Contains(errOut, "tessera user list") {
			t.Errorf("%v: exit %d %q %q, want 2 naming the user and pointing at tessera user list", args, code, out, errOut)
		}
	}
}

// dbWithUser migrates a new database with the CLI and adds user to it (a
// viewer); it returns the database's path.
func dbWithUser(t *testing.T, user string) string {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "t.db")
	if code, _, errOut := run(t, "migrate", "--db", dbPath); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pw := writeFile(t, "pw", "correct-horse-battery\n")
	if code, _, errOut := run(t, "user", "add", user, "--password-file", pw, "--db", dbPath); code != 0 {
		t.Fatalf("user add: %s", errOut)
	}
	return dbPath
}
