package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

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
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
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
