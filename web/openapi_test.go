package web_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/web"
)

// TestOpenAPIMatchesRouter: every /api/v1 route of the router is in the
// served OpenAPI document, and every documented operation is a real route.
func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	resp, err := http.Get(env.URL + "/api/v1/openapi.json") // public: no token
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	routed := map[string]bool{}
	for _, r := range env.Echo.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/*" || r.Method == http.MethodHead { // HEAD: every GET's
			continue
		}
		routed[r.Method+" "+web.OpenAPIPath(r.Path)] = true
	}
	var missing, extra []string
	for k := range routed {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("routes without documentation: %v\ndocumented operations that are not routes: %v", missing, extra)
	}
}

// The document says what a backfill request may leave out, and the defaults
// it gets then are the ones the server applies.
func TestOpenAPIBackfillRequestDefaults(t *testing.T) {
	doc := web.OpenAPI(nil)
	s := doc["components"].(map[string]any)["schemas"].(map[string]any)["BackfillRequest"].(map[string]any)
	if req := s["required"].([]string); strings.Join(req, ",") != "assets,selector" {
		t.Errorf("required %v, want only assets and selector", req)
	}
	props := s["properties"].(map[string]any)
	for field, want := range map[string][3]int{
		"chunk_size":          {jobs.DefaultChunkSize, 1, jobs.MaxChunkSize},
		"max_concurrent_runs": {jobs.DefaultMaxConcurrentRuns, 1, jobs.MaxConcurrentRunsCap},
	} {
		p := props[field].(map[string]any)
		if p["default"] != want[0] || p["minimum"] != want[1] || p["maximum"] != want[2] {
			t.Errorf("%s: %v, want default %d, minimum %d, maximum %d", field, p, want[0], want[1], want[2])
		}
	}
}

// The document's parameters and bodies are the ones the handlers read: the
// staleness endpoint takes ?partition= (it has no pages), and the
// transitions, retry-failed and the run callback work without a body.
func TestOpenAPIParametersAndOptionalBodies(t *testing.T) {
	doc := web.OpenAPI(nil)
	paths := doc["paths"].(map[string]map[string]any)
	op := func(method, path string) map[string]any { return paths[path][method].(map[string]any) }
	var names []string
	for _, p := range op("get", "/api/v1/assets/{key}/staleness")["parameters"].([]any) {
		if p := p.(map[string]any); p["in"] == "query" {
			names = append(names, p["name"].(string))
		}
	}
	if strings.Join(names, ",") != "partition" {
		t.Errorf("staleness query parameters %v, want [partition]", names)
	}
	for path, required := range map[string]bool{
		"/api/v1/backfills/{id}/pause":        false,
		"/api/v1/backfills/{id}/resume":       false,
		"/api/v1/backfills/{id}/cancel":       false,
		"/api/v1/backfills/{id}/retry-failed": false,
		"/api/v1/runs/{id}/complete":          false,
		"/api/v1/backfills":                   true,
		"/api/v1/materializations":            true,
	} {
		if got := op("post", path)["requestBody"].(map[string]any)["required"]; got != required {
			t.Errorf("POST %s: requestBody.required %v, want %v", path, got, required)
		}
	}
}
