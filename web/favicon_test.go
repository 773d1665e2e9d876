package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
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
		req, _ := http.NewRequest(method, env.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
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
