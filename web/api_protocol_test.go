package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The API takes JSON bodies only (415 otherwise, nothing written) and answers
// a known path with the wrong method with 405 and an Allow header.
func TestAPIContentTypeAndMethods(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	do := func(method, path, ctype, body string) (*http.Response, map[string]any) {
		t.Helper()
		var hdr []string
		if ctype != "" {
			hdr = []string{"Content-Type", ctype}
		}
		return apiDo(t, http.DefaultClient, env.URL+path, tok, method, body, hdr...)
	}
	events := func() int64 {
		n, err := env.Store.CountEvents(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := events()
	body := `{"assets":["raw.events"],"selector":{"type":"range"},"chunk_size":10,"max_concurrent_runs":1}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx"} {
		resp, out := do("POST", "/api/v1/backfills", ct, body)
		if code, msg := apiError(out); resp.StatusCode != http.StatusUnsupportedMediaType || code != "unsupported_media_type" || !strings.Contains(msg, "Content-Type: application/json") {
			t.Errorf("Content-Type %q: %d %v", ct, resp.StatusCode, out)
		}
	}
	if after := events(); after != before {
		t.Fatalf("bodies that are not JSON wrote %d events", after-before)
	}
	// JSON with a charset is JSON; a body-less POST needs no Content-Type.
	if resp, out := do("POST", "/api/v1/backfills/preview", "application/json; charset=utf-8", body); resp.StatusCode != http.StatusOK {
		t.Errorf("JSON with charset: %d %v", resp.StatusCode, out)
	}
	if resp, out := do("POST", "/api/v1/backfills/bf_nope/pause", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("pause without a body: %d %v", resp.StatusCode, out)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/api/v1/backfills/bf_x/pause", "OPTIONS, POST"},
		{"DELETE", "/api/v1/backfills/bf_x", "GET, HEAD, OPTIONS"},
		{"PUT", "/api/v1/backfills", "GET, HEAD, OPTIONS, POST"},
		{"GET", "/api/v1/backfills/preview", "OPTIONS, POST"},
		{"HEAD", "/api/v1/backfills/preview", "OPTIONS, POST"},
		{"HEAD", "/api/v1/backfills/bf_x/cancel", "OPTIONS, POST"},
	} {
		resp, out := do(c.method, c.path, "", "")
		if code, _ := apiError(out); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || c.method != "HEAD" && code != "method_not_allowed" {
			t.Errorf("%s %s: %d Allow %q %v", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), out)
		}
	}
	if resp, _ := do("GET", "/api/v1/nothing/here", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// Every GET endpoint answers HEAD as it answers GET (status, headers, roles),
// without a body; OPTIONS on a known API path is a 204 whose Allow header
// lists its methods.
func TestAPIHeadAndOptions(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleViewer)
	do := func(method, path, token string) (*http.Response, []byte) {
		t.Helper()
		resp, body := testkit.Fetch(t, http.DefaultClient, method, env.URL+path, token)
		return resp, []byte(body)
	}
	for _, c := range []struct {
		path, token string
		status      int
	}{
		{"/api/v1/backfills", tok, http.StatusOK},
		{"/api/v1/backfills?limit=0", tok, http.StatusBadRequest},
		{"/api/v1/backfills/bf_nope", tok, http.StatusNotFound},
		{"/api/v1/assets/raw.events/partitions?limit=2", tok, http.StatusOK},
		{"/api/v1/me", tok, http.StatusOK},
		{"/api/v1/me", "", http.StatusUnauthorized},
		{"/api/v1/openapi.json", "", http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		get, body := do("GET", c.path, c.token)
		head, hbody := do("HEAD", c.path, c.token)
		if get.StatusCode != c.status || head.StatusCode != c.status || len(body) == 0 || len(hbody) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("%s: GET %d %q (%d bytes), HEAD %d %q (%d bytes); want %d both, HEAD without a body",
				c.path, get.StatusCode, get.Header.Get("Content-Type"), len(body), head.StatusCode, head.Header.Get("Content-Type"), len(hbody), c.status)
		}
	}
	for _, c := range []struct {
		path   string
		status int
		allow  string
	}{
		{"/api/v1/backfills", http.StatusNoContent, "GET, HEAD, OPTIONS, POST"},
		{"/api/v1/backfills/preview", http.StatusNoContent, "OPTIONS, POST"},
		{"/api/v1/backfills/bf_x", http.StatusNoContent, "GET, HEAD, OPTIONS"},
		{"/api/v1/backfills/bf_x/pause", http.StatusNoContent, "OPTIONS, POST"},
		{"/api/v1/users/7", http.StatusNoContent, "OPTIONS, POST"},
		{"/api/v1/nothing/here", http.StatusNotFound, ""},
	} {
		resp, _ := do("OPTIONS", c.path, "")
		if resp.StatusCode != c.status || resp.Header.Get("Allow") != c.allow {
			t.Errorf("OPTIONS %s: %d Allow %q, want %d Allow %q", c.path, resp.StatusCode, resp.Header.Get("Allow"), c.status, c.allow)
		}
	}
}

// A body over the server's limit is a 413 in the API's error shape that
// says the limit and what to do, not echo's bare "Request Entity Too
// Large"; nothing is written.
func TestAPIBodyTooLargeSaysTheLimit(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	tok := env.Token(t, auth.RoleOperator)
	before, err := env.Store.CountEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	big := `[{"asset":"raw.events","partition":"2025-01-01-00:00","status":"failed","error":"` + strings.Repeat("x", 33<<20) + `"}]`
	resp, out := apiDo(t, http.DefaultClient, env.URL+"/api/v1/materializations", tok, "POST", big, "Content-Type", "application/json")
	code, msg := apiError(out)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || code != "request_entity_too_large" ||
		!strings.Contains(msg, "larger than 32 MiB") || !strings.Contains(msg, "send less") {
		t.Fatalf("%d %v, want 413 request_entity_too_large saying the limit", resp.StatusCode, out)
	}
	if after, _ := env.Store.CountEvents(t.Context()); after != before {
		t.Fatalf("a refused body wrote %d events", after-before)
	}
}

// A path the server has no route for (a --server with a path prefix, a
// mistyped URL) is a 404 that names the path and says where the pages and
// the API are, not echo's bare "Not Found".
func TestUnknownPathSaysWhatIsThere(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	tok := env.Token(t, auth.RoleViewer)
	resp, out := apiDo(t, http.DefaultClient, env.URL+"/tessera/api/v1/status", tok, "GET", "", "Accept", "application/json")
	code, msg := apiError(out)
	if resp.StatusCode != http.StatusNotFound || code != "not_found" ||
		!strings.Contains(msg, "/tessera/api/v1/status") || !strings.Contains(msg, "the API at /api/v1") {
		t.Fatalf("%d %v, want 404 naming the path and where the API is", resp.StatusCode, out)
	}
}

// A POST to a path with a trailing slash (/api/v1/backfills/) was answered
// 301 to the path without it; clients that follow a 301 (Python's urllib
// and requests, Go's net/http) send the request again as a GET, so a create
// "succeeded" with 200 and the list of backfills while nothing was created.
// A request that is not a GET or HEAD is now served at the path without
// the slash; GET and HEAD still get the 301 to it.
func TestTrailingSlashKeepsTheMethod(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	tok := env.Token(t, auth.RoleOperator)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string) (*http.Response, map[string]any) {
		t.Helper()
		var hdr []string
		if body != "" {
			hdr = []string{"Content-Type", "application/json"}
		}
		return apiDo(t, client, env.URL+path, tok, method, body, hdr...)
	}
	body := `{"assets":["raw.events"],"selector":{"type":"range","start":"2025-01-01-00:00","end":"2025-01-01-01:00"}}`
	resp, out := do("POST", "/api/v1/backfills/", body)
	if resp.StatusCode != http.StatusCreated || out["id"] == nil || resp.Header.Get("Location") != "/api/v1/backfills/"+fmt.Sprint(out["id"]) {
		t.Fatalf("POST /api/v1/backfills/: %d %v (Location %q), want 201 and the backfill", resp.StatusCode, out, resp.Header.Get("Location"))
	}
	if resp, out := do("POST", "/api/v1/backfills/preview/", body); resp.StatusCode != http.StatusOK || out["total_partitions"] == nil {
		t.Fatalf("POST /api/v1/backfills/preview/: %d %v", resp.StatusCode, out)
	}
	if resp, _ := do("GET", "/api/v1/backfills/", ""); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/api/v1/backfills" {
		t.Fatalf("GET /api/v1/backfills/: %d, Location %q, want the 301 to /api/v1/backfills", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// apiDo sends a method request with body to url through c, with the bearer
// token tok and the headers hdr (name, value pairs), and answers the
// response with its JSON body (nil when the body is not a JSON object).
func apiDo(t *testing.T, c *http.Client, url, tok, method, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := testkit.Send(t, c, req, hdr...)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// apiError is the code and the message of an API error answer ("" when
// out is not one).
func apiError(out map[string]any) (code, msg string) {
	er, _ := out["error"].(map[string]any)
	code, _ = er["code"].(string)
	msg, _ = er["message"].(string)
	return code, msg
}
