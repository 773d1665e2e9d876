package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The API takes JSON bodies only (415 otherwise, nothing written) and answers
// a known path with the wrong method with 405 and an Allow header.
func TestAPIContentTypeAndMethods(t *testing.T) {
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, handlers.RoleOperator)
	do := func(method, path, ctype, body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
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
		er, _ := out["error"].(map[string]any)
		if resp.StatusCode != http.StatusUnsupportedMediaType || er["code"] != "unsupported_media_type" || !strings.Contains(er["message"].(string), "Content-Type: application/json") {
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
		{"GET", "/api/v1/backfills/bf_x/pause", "POST"},
		{"DELETE", "/api/v1/backfills/bf_x", "GET"},
		{"PUT", "/api/v1/backfills", "GET, POST"},
		{"GET", "/api/v1/backfills/preview", "POST"},
	} {
		resp, out := do(c.method, c.path, "", "")
		er, _ := out["error"].(map[string]any)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || er["code"] != "method_not_allowed" {
			t.Errorf("%s %s: %d Allow %q %v", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), out)
		}
	}
	if resp, _ := do("GET", "/api/v1/nothing/here", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}
