package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestFirstAdminIsCreatedOnceAndLoggedOnce: an empty database gets "admin"
// with a random password printed in one log line; a second start creates
// nothing and logs no password.
func TestFirstAdminIsCreatedOnceAndLoggedOnce(t *testing.T) {
	t.Parallel()
	store := teststore.Open(t)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := ensureFirstAdmin(context.Background(), store, log, "http://127.0.0.1:8080/"); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`msg="created first admin account[^"]*" user=admin password=(\S+)`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("log does not show the first admin password: %s", buf.String())
	}
	u, err := store.UserByName(context.Background(), "admin")
	if err != nil || u.Role != "admin" || !auth.CheckPassword(u.PasswordHash, m[1]) {
		t.Fatalf("admin account: %+v %v", u, err)
	}
	buf.Reset()
	if err := ensureFirstAdmin(context.Background(), store, log, "http://127.0.0.1:8080/"); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("second start logged: %s", buf.String())
	}
}

// TestSessionKeyFile: created 0600 on first start, then reused.
func TestSessionKeyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.db.session-key")
	k1, err := sessionKeyFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v", st.Mode(), err)
	}
	k2, err := sessionKeyFile(p)
	if err != nil || k1 != k2 || len(k1) < 32 {
		t.Fatalf("key not reused: %q %q %v", k1, k2, err)
	}
	a := authFlags{Idle: "12h", Max: "7d", Secure: "auto", LoginLimit: "5/15m"}
	t.Setenv("TESSERA_SESSION_KEYS", "first-key-0123456789, old-key-0123456789")
	cfg, err := a.config(filepath.Join(t.TempDir(), "x.db"))
	if err != nil || len(cfg.SessionKeys) != 2 || cfg.LoginLimit.Failures != 5 {
		t.Fatalf("config: %+v %v", cfg, err)
	}
	good := authFlags{Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", LoginTrust: "off", HashSlots: "3"}
	if cfg, err := good.settings(); err != nil || cfg.LoginTrust >= 0 || cfg.HashSlots != 3 {
		t.Fatalf("--login-trust off --login-hash-slots 3: %+v %v", cfg, err)
	}
	for _, bad := range []authFlags{{Idle: "soon", Max: "7d", Secure: "auto", LoginLimit: "5/15m"}, {Idle: "1h", Max: "7d", Secure: "maybe", LoginLimit: "5/15m"}, {Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "five"},
		{Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", LoginTrust: "forever"}, {Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", LoginTrust: "-3d"},
		{Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", HashSlots: "0"}, {Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", HashSlots: "many"}, {Idle: "1h", Max: "7d", Secure: "auto", LoginLimit: "5/15m", HashSlots: "1000"}} {
		if _, err := bad.config(filepath.Join(t.TempDir(), "x.db")); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v accepted: %v", bad, err)
		}
	}
}
