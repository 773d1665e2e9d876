package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/web"
)

// TestMetricsAccess: /metrics names every asset, so by default it answers
// only a viewer (token or session) and tells anyone else 401 (a scraper
// follows no sign-in page); with anonymous viewing on it is as open as the
// pages; MetricsPublic opens it to all; MetricsElsewhere takes it off the
// main listener for one of its own.
func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, c *http.Client, url, token string) (int, string) {
		t.Helper()
		resp, body := testkit.Fetch(t, c, http.MethodGet, url+"/metrics", token)
		return resp.StatusCode, body
	}
	t.Run("viewer only by default", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{})
		code, body := get(t, env.Anon(), env.URL, "")
		if code != http.StatusUnauthorized || strings.Contains(body, "tessera_") || !strings.Contains(body, "Bearer") {
			t.Errorf("anonymous: HTTP %d %.200q, want 401 saying to send a bearer token", code, body)
		}
		code, body = get(t, http.DefaultClient, env.URL, env.Token(t, auth.RoleViewer))
		if code != http.StatusOK || !strings.Contains(body, "tessera_http_requests_total") {
			t.Errorf("viewer token: HTTP %d %.300q, want the metrics", code, body)
		}
		code, body = get(t, env.Client(t, auth.RoleViewer), env.URL, "")
		if code != http.StatusOK || !strings.Contains(body, "tessera_http_requests_total") {
			t.Errorf("viewer session: HTTP %d %.300q, want the metrics", code, body)
		}
	})
	t.Run("anonymous viewer", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{AnonymousViewer: true, LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1}})
		if code, _ := get(t, env.Anon(), env.URL, ""); code != http.StatusOK {
			t.Errorf("anonymous with anonymous viewing: HTTP %d, want 200", code)
		}
	})
	t.Run("public", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{Web: web.Options{MetricsPublic: true}})
		if code, body := get(t, env.Anon(), env.URL, ""); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
			t.Errorf("anonymous with public metrics: HTTP %d %.200q, want the metrics", code, body)
		}
	})
	t.Run("own listener", func(t *testing.T) {
		t.Parallel()
		env := testkit.New(t, testkit.Options{Web: web.Options{MetricsElsewhere: true}})
		if code, body := get(t, http.DefaultClient, env.URL, env.AdminToken()); code != http.StatusNotFound {
			t.Errorf("main listener with metrics elsewhere: HTTP %d %.200q, want 404", code, body)
		}
		srv := httptest.NewServer(env.Metrics)
		t.Cleanup(srv.Close)
		if code, body := get(t, http.DefaultClient, srv.URL, ""); code != http.StatusOK || !strings.Contains(body, "tessera_http_requests_total{") {
			t.Errorf("metrics listener: HTTP %d %.200q, want the metrics", code, body)
		}
	})
}
