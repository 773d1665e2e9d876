package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestSignInAndOutWhileTheStoreCannotWrite: while the database refuses
// writes, the sign-in page says why (503, Retry-After) instead of a generic
// error page, signing out still signs the browser out, and the banner that
// open pages ask for again follows the store: there while it fails, gone
// once it writes again.
func TestSignInAndOutWhileTheStoreCannotWrite(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.Store.SetFaultHold(50 * time.Millisecond)
	env.CreateUser(t, "lou", auth.RoleViewer, testkit.TestPassword)
	lou := env.Login(t, "lou", testkit.TestPassword)
	banner := func() string {
		resp, err := env.Anon().Get(env.URL + "/fault-banner")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if b := banner(); strings.Contains(b, "store-banner") {
		t.Fatalf("a banner while the store writes: %s", b)
	}
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 1`); err != nil { // every write now fails as SQLITE_READONLY
		t.Fatal(err)
	}
	r := env.SessionPost(t, env.Anon(), "/login", url.Values{"name": {"lou"}, "password": {testkit.TestPassword}})
	page, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(string(page), "the database cannot be written") ||
		!strings.Contains(string(page), `name="password"`) {
		t.Fatalf("sign-in while the store cannot write: %d Retry-After %q, want 503 on the sign-in page saying why", r.StatusCode, r.Header.Get("Retry-After"))
	}
	r = env.SessionPost(t, lou, "/logout", nil)
	r.Body.Close()
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out while the store cannot write: %d, want 303", r.StatusCode)
	}
	resp, err := lou.Get(env.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("after signing out the browser still reads pages: %d", resp.StatusCode)
	}
	if b := banner(); !strings.Contains(b, "store-banner") || !strings.Contains(b, "read-only") {
		t.Fatalf("no banner while the store cannot write: %s", b)
	}
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the banner to go once the store writes again", func() bool { return !strings.Contains(banner(), "store-banner") })
}
