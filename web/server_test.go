package web_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// Every page links the SVG favicon, which is served as SVG; /favicon.ico,
// which browsers ask for on their own, redirects to it instead of a 404,
// for anyone (no session, a bad token) and for HEAD too.
func TestFavicon(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	noRedirect := func(req *http.Request, via []*http.Request) error { return http.ErrUseLastResponse }
	get := func(c *http.Client, method, path, token string) (*http.Response, string) {
		t.Helper()
		return testkit.Fetch(t, c, method, env.URL+path, token)
	}
	const link = `<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">`
	for path, c := range map[string]*http.Client{"/login": env.Anon(), "/": env.Client(t, auth.RoleViewer)} {
		if resp, page := get(c, "GET", path, ""); resp.StatusCode != 200 || !strings.Contains(page, link) {
			t.Errorf("%s: %d, link to the favicon: %v", path, resp.StatusCode, strings.Contains(page, link))
		}
	}
	resp, svg := get(http.DefaultClient, "GET", "/static/favicon.svg", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(svg, "<svg ") || !strings.Contains(svg, "</svg>") {
		t.Fatalf("favicon.svg: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), svg)
	}
	anon := &http.Client{CheckRedirect: noRedirect}
	for _, tc := range []struct{ method, token string }{{"GET", ""}, {"HEAD", ""}, {"GET", "tsr_nope"}} {
		resp, _ := get(anon, tc.method, "/favicon.ico", tc.token)
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/static/favicon.svg" {
			t.Errorf("%s /favicon.ico (token %q): %d %q, want 301 to /static/favicon.svg", tc.method, tc.token, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// Followed, it ends at the icon.
	if resp, body := get(http.DefaultClient, "GET", "/favicon.ico", ""); resp.StatusCode != 200 || body != svg {
		t.Errorf("/favicon.ico followed: %d", resp.StatusCode)
	}
}

// TestStaticDirectoriesAreNotFound: a directory under /static is no page —
// no listing and no redirect loop between "vendor" and "vendor/" (the
// trailing-slash middleware removed the slash that http.FileServer added
// back) — but a 404 within at most one redirect.
func TestStaticDirectoriesAreNotFound(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	for _, path := range []string{"/static/vendor", "/static/vendor/", "/static", "/static/", "/static/vendor/../vendor"} {
		hops := 0
		c := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
			hops = len(via)
			if len(via) > 1 {
				return errors.New("more than one redirect")
			}
			return nil
		}}
		resp, err := c.Get(env.URL + path)
		if err != nil {
			t.Errorf("GET %s: %v (after %d redirects)", path, err, hops)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: HTTP %d after %d redirects, want 404", path, resp.StatusCode, hops)
		}
	}
	// Files are still served.
	resp := testkit.GetNoBody(t, http.DefaultClient, env.URL+"/static/vendor/htmx.min.js")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /static/vendor/htmx.min.js: HTTP %d, want 200", resp.StatusCode)
	}
}

// TestHSTSOnlyOverHTTPS: answers over TLS, and over a trusted proxy that
// says https, carry Strict-Transport-Security; plain HTTP never does, not
// even with an X-Forwarded-Proto that nobody trusts, nor with
// --secure-cookies always.
func TestHSTSOnlyOverHTTPS(t *testing.T) {
	t.Parallel()
	const want = "max-age=31536000; includeSubDomains"
	get := func(t *testing.T, c *http.Client, url, proto string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp := testkit.DoNoBody(t, c, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /login: HTTP %d", resp.StatusCode)
		}
		return resp.Header.Get("Strict-Transport-Security")
	}

	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{})
		srv := httptest.NewTLSServer(env.Echo)
		t.Cleanup(srv.Close)
		if got := get(t, srv.Client(), srv.URL, ""); got != want {
			t.Errorf("over TLS: Strict-Transport-Security = %q, want %q", got, want)
		}
		if got := get(t, http.DefaultClient, env.URL, ""); got != "" {
			t.Errorf("over plain HTTP: Strict-Transport-Security = %q, want none", got)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{TrustProxy: true, LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1}})
		if got := get(t, http.DefaultClient, env.URL, "https"); got != want {
			t.Errorf("trusted proxy, X-Forwarded-Proto: https: Strict-Transport-Security = %q, want %q", got, want)
		}
		if got := get(t, http.DefaultClient, env.URL, "http"); got != "" {
			t.Errorf("trusted proxy, X-Forwarded-Proto: http: Strict-Transport-Security = %q, want none", got)
		}
	})
	t.Run("untrusted proxy header", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{SecureCookies: "always", LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1}})
		if got := get(t, http.DefaultClient, env.URL, "https"); got != "" {
			t.Errorf("plain HTTP with an untrusted X-Forwarded-Proto: https and secure cookies always: Strict-Transport-Security = %q, want none", got)
		}
	})
}

// TestFormAddressOpenedAsPage: a page address that only a form posts to,
// opened as a page (/logout typed in, a Pause or a role change opened again
// in a new tab), says what it is and what to do, not echo's "Method Not
// Allowed"; the API's 405 keeps its JSON message and code.
func TestFormAddressOpenedAsPage(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	c := env.Client(t, auth.RoleAdmin)
	for _, path := range []string{"/logout", "/backfills/bf_x/pause", "/admin/users/1/role", "/settings/tokens/1/revoke"} {
		status, page := env.GetText(t, c, path)
		if status != http.StatusMethodNotAllowed || strings.Contains(page, "Method Not Allowed") ||
			!strings.Contains(page, "is where a form sends a change") || !strings.Contains(page, "go back to the page with the button") {
			_, msg, _ := strings.Cut(page, `data-testid="error-message">`)
			msg, _, _ = strings.Cut(msg, "</p>")
			t.Errorf("GET %s: %d, the page says %q", path, status, msg)
		}
	}
	resp, body := testkit.Fetch(t, http.DefaultClient, "GET", env.URL+"/api/v1/backfills/bf_x/pause", env.Token(t, auth.RoleAdmin))
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, `"code":"method_not_allowed"`) || strings.Contains(body, "form sends") {
		t.Errorf("API GET of an action: %d %s", resp.StatusCode, body)
	}
}
