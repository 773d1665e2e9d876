package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// The CSRF token of a signed-in session is bound to the session: a planted
// _csrf cookie with the matching form field is refused and writes nothing;
// behind TLS the _csrf cookie is Secure like the session cookie.
func TestCSRFTokenBoundToSession(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{TrustProxy: true}})
	c := env.Client(t, auth.RoleViewer)
	u, _ := url.Parse(env.URL + "/")
	var session string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name != "_csrf" {
			session += ck.Name + "=" + ck.Value + "; "
		}
	}
	_, tokensBefore, _ := countAccounts(t, env)
	for _, planted := range []string{"anything1234", env.CSRF(t, env.Client(t, auth.RoleViewer))} { // made up, or another session's
		form := url.Values{"name": {"planted"}, "_csrf": {planted}}
		req, _ := http.NewRequest("POST", env.URL+"/settings/tokens", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", session+"_csrf="+planted)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("planted token %q: %d, want 403", planted, resp.StatusCode)
		}
	}
	if _, tokens, _ := countAccounts(t, env); tokens != tokensBefore {
		t.Fatalf("a planted CSRF token created %d tokens", tokens-tokensBefore)
	}
	// The session's own form still works.
	if resp := env.SessionPost(t, c, "/settings/tokens", url.Values{"name": {"mine"}}); resp.StatusCode >= 400 {
		t.Fatalf("the session's own form: %d", resp.StatusCode)
	}
	if _, tokens, _ := countAccounts(t, env); tokens != tokensBefore+1 {
		t.Fatalf("the session's own form created %d tokens, want 1", tokens-tokensBefore)
	}
	// Behind a TLS-terminating proxy the CSRF cookie is Secure.
	req, _ := http.NewRequest("GET", env.URL+"/login", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	found := false
	for _, ck := range resp.Cookies() {
		if ck.Name == "_csrf" {
			found = true
			if !ck.Secure {
				t.Error("the _csrf cookie is not Secure behind TLS")
			}
		}
	}
	if !found {
		t.Error("no _csrf cookie on the login page")
	}
}
