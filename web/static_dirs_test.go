package web_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

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
	resp, err := http.Get(env.URL + "/static/vendor/htmx.min.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /static/vendor/htmx.min.js: HTTP %d, want 200", resp.StatusCode)
	}
}
