package web_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
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
	t.Parallel()
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
	t.Parallel()
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

// schemaChecker checks JSON answers against the served OpenAPI document's
// component schemas: every key an answer has is documented, every key the
// schema requires is there, a null only where the schema allows one, and
// the JSON type is the documented one — recursively, through $ref, arrays
// and additionalProperties.
type schemaChecker struct {
	t       *testing.T
	schemas map[string]any
	// errs, when set, collects the mismatches instead of failing the test
	// (to try the alternatives of a oneOf).
	errs *[]string
}

func (sc schemaChecker) errorf(format string, args ...any) {
	sc.t.Helper()
	if sc.errs != nil {
		*sc.errs = append(*sc.errs, fmt.Sprintf(format, args...))
		return
	}
	sc.t.Errorf(format, args...)
}

func (sc schemaChecker) check(where string, v any, schema map[string]any) {
	sc.t.Helper()
	if r, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		s, ok := sc.schemas[name].(map[string]any)
		if !ok {
			sc.errorf("%s: $ref %s is not a schema", where, r)
			return
		}
		schema = s
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		// Exactly one alternative describes the answer.
		matched, why := 0, []string{}
		for i, alt := range alts {
			var errs []string
			schemaChecker{t: sc.t, schemas: sc.schemas, errs: &errs}.check(where, v, alt.(map[string]any))
			if len(errs) == 0 {
				matched++
			} else {
				why = append(why, fmt.Sprintf("alternative %d: %s", i, strings.Join(errs, "; ")))
			}
		}
		if matched != 1 {
			sc.errorf("%s: %d of the oneOf alternatives describe the answer, want 1 (%s)", where, matched, strings.Join(why, " | "))
		}
		return
	}
	if len(schema) == 0 {
		return // {}: any JSON value
	}
	var types []string
	switch ty := schema["type"].(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, x.(string))
		}
	}
	var jsonType string
	switch x := v.(type) {
	case nil:
		jsonType = "null"
	case bool:
		jsonType = "boolean"
	case float64:
		jsonType = "number"
		if x == float64(int64(x)) {
			jsonType = "integer"
		}
	case string:
		jsonType = "string"
	case []any:
		jsonType = "array"
	case map[string]any:
		jsonType = "object"
	}
	if len(types) > 0 && !slices.Contains(types, jsonType) && !(jsonType == "integer" && slices.Contains(types, "number")) {
		sc.errorf("%s: a JSON %s (%v), documented as %v", where, jsonType, v, types)
		return
	}
	if e, ok := schema["enum"].([]any); ok && v != nil && !slices.Contains(e, v) {
		sc.errorf("%s: %v is not one of the documented %v", where, v, e)
	}
	switch x := v.(type) {
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, it := range x {
				sc.check(fmt.Sprintf("%s[%d]", where, i), it, items)
			}
		}
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		if props == nil && extra == nil {
			sc.errorf("%s: documented as an object with no properties; the answer has %v", where, slices.Sorted(maps.Keys(x)))
			return
		}
		for k, val := range x {
			switch p, ok := props[k].(map[string]any); {
			case ok:
				sc.check(where+"."+k, val, p)
			case extra != nil:
				sc.check(where+"."+k, val, extra)
			case props != nil || schema["additionalProperties"] == false:
				sc.errorf("%s: the answer has %q, which the schema does not document", where, k)
			}
		}
		req, _ := schema["required"].([]any)
		for _, k := range req {
			if _, ok := x[k.(string)]; !ok {
				sc.errorf("%s: the schema requires %q, which the answer lacks", where, k)
			}
		}
	}
}

// apiAnswerer returns call, which calls an endpoint with token tok and
// decodes its JSON answer, and answer, which also checks that answer against
// the schema the served document gives for the operation's status.
func apiAnswerer(t *testing.T, url, tok string) (call func(method, path, body string) (int, any), answer func(method, path, docPath, body string) map[string]any) {
	resp, err := http.Get(url + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := schemaChecker{t: t, schemas: doc.Components.Schemas}
	call = func(method, path, body string) (int, any) {
		t.Helper()
		resp, out := testkit.APIRequest(t, url, tok, method, path, body, "Content-Type", "application/json")
		return resp.StatusCode, out
	}
	// answer calls an endpoint and checks its answer against the schema the
	// document gives for that operation's success status.
	answer = func(method, path, docPath, body string) map[string]any {
		t.Helper()
		code, out := call(method, path, body)
		op, ok := doc.Paths[docPath][strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s is not documented", method, docPath)
		}
		res, ok := op["responses"].(map[string]any)[fmt.Sprint(code)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s answered %d %v, a status the document does not give", method, path, code, out)
		}
		schema := res["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		sc.check(method+" "+docPath, out, schema)
		m, _ := out.(map[string]any)
		return m
	}
	return call, answer
}

// The documented schemas of the backfill, preview, run, chunk and conflict
// answers describe what the handlers answer, key by key.
func TestOpenAPISchemasMatchAnswers(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("ok.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}"),
		testkit.Asset("f.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
		testkit.Asset("slow.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 1h}}"),
	)
	env.StartEngine(t, jobs.Options{})
	call, answer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleOperator))
	waitState := func(id string, states ...string) {
		t.Helper()
		testkit.Eventually(t, 20*time.Second, fmt.Sprintf("backfill %s to be %v", id, states), func() bool {
			_, b := call("GET", "/api/v1/backfills/"+id, "")
			return slices.Contains(states, fmt.Sprint(b.(map[string]any)["state"]))
		})
	}

	answer("POST", "/api/v1/backfills/preview", "/api/v1/backfills/preview", `{"assets":["ok.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-04"}}`)
	answer("POST", "/api/v1/backfills/preview", "/api/v1/backfills/preview", `{"assets":["ok.daily"],"selector":{"type":"explicit","keys":["2025-01-02"]}}`)
	// "chunk_size": null is left out: the default.
	ok := answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["ok.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-04"},"chunk_size":null,"max_concurrent_runs":null}`)
	if ok["chunk_size"] != float64(jobs.DefaultChunkSize) || ok["max_concurrent_runs"] != float64(jobs.DefaultMaxConcurrentRuns) {
		t.Fatalf("null settings: %v", ok)
	}
	okID := ok["id"].(string)
	waitState(okID, "SUCCEEDED")
	answer("GET", "/api/v1/backfills/"+okID, "/api/v1/backfills/{id}", "")
	answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["ok.daily"],"selector":{"type":"explicit","keys":["2025-01-09","2025-01-10"]}}`)
	chunks := answer("GET", "/api/v1/backfills/"+okID+"/chunks?limit=2", "/api/v1/backfills/{id}/chunks", "")
	run0 := chunks["chunks"].([]any)[0].(map[string]any)["id"].(string)
	answer("GET", "/api/v1/runs/"+run0, "/api/v1/runs/{id}", "")

	// A failed backfill and its retry child (with retry_request_id).
	f := answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["f.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"}}`)
	waitState(f["id"].(string), "FAILED")
	fchunks := answer("GET", "/api/v1/backfills/"+f["id"].(string)+"/chunks", "/api/v1/backfills/{id}/chunks", "")
	answer("GET", "/api/v1/runs/"+fchunks["chunks"].([]any)[0].(map[string]any)["id"].(string), "/api/v1/runs/{id}", "")
	child := answer("POST", "/api/v1/backfills/"+f["id"].(string)+"/retry-failed", "/api/v1/backfills/{id}/retry-failed", `{"retry_request_id":"again"}`)
	if child["retry_request_id"] != "again" {
		t.Errorf("child %v", child)
	}

	// A running backfill: pause, resume, a run in flight, a queued run, cancel with terminate.
	slow := answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["slow.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"max_concurrent_runs":1}`)
	slowID := slow["id"].(string)
	waitState(slowID, "RUNNING")
	paused := answer("POST", "/api/v1/backfills/"+slowID+"/pause", "/api/v1/backfills/{id}/pause", "")
	answer("POST", "/api/v1/backfills/"+slowID+"/resume", "/api/v1/backfills/{id}/resume", fmt.Sprintf(`{"expected_state_version":%v}`, paused["state_version"]))
	for _, c := range answer("GET", "/api/v1/backfills/"+slowID+"/chunks", "/api/v1/backfills/{id}/chunks", "")["chunks"].([]any) {
		answer("GET", "/api/v1/runs/"+c.(map[string]any)["id"].(string), "/api/v1/runs/{id}", "")
	}
	canceled := answer("POST", "/api/v1/backfills/"+slowID+"/cancel", "/api/v1/backfills/{id}/cancel", `{"terminate":true}`)
	if canceled["terminate"] != true {
		t.Errorf("cancel with terminate: %v", canceled)
	}
	answer("GET", "/api/v1/backfills?limit=2", "/api/v1/backfills", "")
	answer("GET", "/api/v1/backfills", "/api/v1/backfills", "")

	// A recorded conflict (the engine records one when a run key comes back
	// with other partitions; here the row is written as it would).
	if _, err := env.Store.RawWriter().Exec(`INSERT INTO conflicts (run_key, backfill_id, existing_fingerprint, requested_fingerprint, at) VALUES (?,?,?,?,?)`,
		"backfill:"+okID+":chunk:0", okID, "fp-a", "fp-b", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	cs := answer("GET", "/api/v1/conflicts", "/api/v1/conflicts", "")
	if len(cs["conflicts"].([]any)) != 1 {
		t.Fatalf("conflicts %v", cs)
	}
}

// Query parameters carry the type their handler reads: limits and attempt
// numbers are integers within the handler's bounds, status and state are
// comma-separated lists of their values; only free text stays a string.
func TestOpenAPIQueryParameterTypes(t *testing.T) {
	t.Parallel()
	doc := web.OpenAPI(nil)
	paths := doc["paths"].(map[string]map[string]any)
	param := func(path, name string) map[string]any {
		t.Helper()
		for _, p := range paths[path]["get"].(map[string]any)["parameters"].([]any) {
			if p := p.(map[string]any); p["in"] == "query" && p["name"] == name {
				return p
			}
		}
		t.Fatalf("GET %s documents no ?%s", path, name)
		return nil
	}
	for _, tc := range []struct {
		path         string
		def, maximum int
	}{
		{"/api/v1/backfills", handlers.DefaultBackfillPageLimit, handlers.MaxBackfillPageLimit},
		{"/api/v1/backfills/{id}/chunks", 100, handlers.MaxPageLimit},
		{"/api/v1/backfills/{id}/events", 100, handlers.MaxPageLimit},
		{"/api/v1/assets/{key}/partitions", 100, handlers.MaxPageLimit},
		{"/api/v1/assets/{key}/partitions/{partition}/history", 100, handlers.MaxPageLimit},
		{"/api/v1/conflicts", 100, handlers.MaxPageLimit},
		{"/api/v1/users", 100, handlers.MaxPageLimit},
		{"/api/v1/tokens", 100, handlers.MaxPageLimit},
	} {
		s := param(tc.path, "limit")["schema"].(map[string]any)
		if s["type"] != "integer" || s["minimum"] != 1 || s["maximum"] != tc.maximum || s["default"] != tc.def {
			t.Errorf("GET %s ?limit: %v, want an integer 1..%d, default %d", tc.path, s, tc.maximum, tc.def)
		}
		if s := param(tc.path, "cursor")["schema"].(map[string]any); s["type"] != "string" {
			t.Errorf("GET %s ?cursor: %v", tc.path, s)
		}
	}
	if s := param("/api/v1/runs/{id}", "attempt")["schema"].(map[string]any); s["type"] != "integer" {
		t.Errorf("?attempt: %v", s)
	}
	for path, want := range map[string][]string{
		"/api/v1/assets/{key}/partitions": db.Statuses,
		"/api/v1/backfills":               db.BackfillStates,
		"/api/v1/backfills/{id}/chunks":   {db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled},
	} {
		name := "state"
		if strings.Contains(path, "partitions") {
			name = "status"
		}
		p := param(path, name)
		s := p["schema"].(map[string]any)
		items, _ := s["items"].(map[string]any)
		if s["type"] != "array" || p["explode"] != false || items == nil || fmt.Sprint(items["enum"]) != fmt.Sprint(want) {
			t.Errorf("GET %s ?%s: %v, want a comma-separated list of %v", path, name, p, want)
		}
	}
}

// The documented schemas of the partition history (with and without ?at),
// gaps, staleness (with and without ?partition), watermark, status board and
// taint answers describe what the handlers answer, key by key.
func TestOpenAPIStalenessSchemasMatchAnswers(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("up.daily", "{daily: {start: 2025-01-01, end: 2025-01-11}}", "code_version: v2"),
		testkit.Asset("down.daily", "{daily: {start: 2025-01-01, end: 2025-01-11}}", "deps: [up.daily]", "code_version: v1", "freshness: {max_lag: 1h}"),
	)
	call, answer := apiAnswerer(t, env.URL, env.AdminToken())
	record := func(items ...string) {
		t.Helper()
		if code, out := call("POST", "/api/v1/materializations", `{"materializations":[`+strings.Join(items, ",")+`]}`); code != http.StatusCreated {
			t.Fatalf("record: %d %v", code, out)
		}
	}
	record(
		// up 01 with an old code version (CODE_CHANGED), metadata and a start.
		`{"asset":"up.daily","partition":"2025-01-01","status":"materialized","code_version":"v1","metadata":{"rows":3,"nested":{"a":[1,2.5]}},"started_at":"2025-06-01T11:00:00Z","at":"2025-06-01T12:00:00Z"}`,
		`{"asset":"up.daily","partition":"2025-01-02","status":"materialized","code_version":"v2","at":"2025-06-01T12:00:00Z"}`,
		`{"asset":"up.daily","partition":"2025-01-05","status":"materialized","code_version":"v2","at":"2025-06-01T12:00:00Z"}`,
		// down 01 built before its upstream (UPSTREAM_CHANGED), down 02 after.
		`{"asset":"down.daily","partition":"2025-01-01","status":"materialized","code_version":"v1","at":"2025-06-01T10:00:00Z"}`,
		`{"asset":"down.daily","partition":"2025-01-02","status":"materialized","code_version":"v1","at":"2025-06-01T13:00:00Z"}`,
	)
	// A later failed attempt: the asset is failing; 01 is superseded.
	record(`{"asset":"up.daily","partition":"2025-01-02","status":"failed","code_version":"v2","error":"boom","at":"2025-06-02T12:00:00Z"}`,
		`{"asset":"up.daily","partition":"2025-01-01","status":"materialized","code_version":"v1","at":"2025-06-02T12:00:00Z"}`)

	// Partition history: pages, and ?at with and without an instance.
	const hist = "/api/v1/assets/{key}/partitions/{partition}/history"
	page := answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-01/history?limit=1", hist, "")
	if page["next_cursor"] == "" {
		t.Fatalf("history page: %v", page)
	}
	answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-01/history?limit=1&cursor="+page["next_cursor"].(string), hist, "")
	answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-02/history", hist, "")
	answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-03/history", hist, "")
	if at := answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-01/history?at=2025-06-01T12:00:00Z", hist, ""); at["instance"] == nil {
		t.Errorf("history at: %v", at)
	}
	if at := answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-02/history?at=2025-06-02", hist, ""); at["message"] != nil || at["last_attempt"] == nil {
		t.Errorf("history at: %v", at)
	}
	if at := answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-01/history?at=2024-01-01", hist, ""); at["instance"] != nil || at["message"] == nil {
		t.Errorf("history at, before any instance: %v", at)
	}

	// Gaps and the watermark: none yet (skipped), then set.
	const gaps = "/api/v1/assets/{key}/gaps"
	if g := answer("GET", "/api/v1/assets/up.daily/gaps", gaps, ""); g["skipped"] != true || g["warning"] == nil {
		t.Errorf("gaps without a watermark: %v", g)
	}
	if code, _ := call("GET", "/api/v1/assets/up.daily/watermark", ""); code != http.StatusNotFound {
		t.Errorf("watermark before any: %d", code)
	}
	answer("POST", "/api/v1/assets/up.daily/watermark", "/api/v1/assets/{key}/watermark", `{"partition":"2025-01-08"}`)
	if w := answer("GET", "/api/v1/assets/up.daily/watermark", "/api/v1/assets/{key}/watermark", ""); w["actor"] == nil {
		t.Errorf("watermark: %v", w)
	}
	if g := answer("GET", "/api/v1/assets/up.daily/gaps", gaps, ""); len(g["ranges"].([]any)) == 0 {
		t.Errorf("gaps: %v", g)
	}
	answer("GET", "/api/v1/assets/up.daily/gaps?from=2025-01-01", gaps, "")
	// Nothing materialized below the watermark (a note).
	answer("POST", "/api/v1/assets/down.daily/watermark", "/api/v1/assets/{key}/watermark", `{"partition":"2025-01-01"}`)
	answer("GET", "/api/v1/assets/down.daily/gaps", gaps, "")

	// Staleness: counts, then one partition of every reason; taint and clear it.
	const stale = "/api/v1/assets/{key}/staleness"
	answer("GET", "/api/v1/assets/up.daily/staleness", stale, "")
	answer("GET", "/api/v1/assets/down.daily/staleness", stale, "")
	taint := answer("POST", "/api/v1/assets/up.daily/partitions/2025-01-05/taint", "/api/v1/assets/{key}/partitions/{partition}/taint", `{"reason":"bad rows"}`)
	answer("GET", "/api/v1/assets/up.daily/partitions/2025-01-05/history?at="+time.Now().UTC().Format(time.RFC3339), hist, "")
	seen := map[any]bool{taint["staleness"].(map[string]any)["reason"]: true}
	for _, p := range []string{"up.daily?partition=2025-01-01", "up.daily?partition=2025-01-03", "up.daily?partition=2025-01-05", "down.daily?partition=2025-01-01", "down.daily?partition=2025-01-02"} {
		s := answer("GET", "/api/v1/assets/"+strings.Replace(p, "?", "/staleness?", 1), stale, "")
		seen[s["staleness"].(map[string]any)["reason"]] = true
	}
	for _, r := range []string{"TAINTED", "CODE_CHANGED", "NEVER_MATERIALIZED", "UPSTREAM_CHANGED"} {
		if !seen[r] {
			t.Errorf("no partition answered %s: %v", r, seen)
		}
	}
	answer("POST", "/api/v1/assets/up.daily/partitions/2025-01-05/clear-taint", "/api/v1/assets/{key}/partitions/{partition}/clear-taint", "")

	// The status board.
	st := answer("GET", "/api/v1/status", "/api/v1/status", "")
	if len(st["assets"].([]any)) != 2 {
		t.Errorf("status: %v", st)
	}
}

// The documented answers of adding dynamic partition keys and of a
// workspace reload describe what the handlers answer, key by key.
func TestOpenAPIKeysAndReloadSchemasMatchAnswers(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("d.feeds", "{dynamic: feeds}"),
	)
	_, answer := apiAnswerer(t, env.URL, env.AdminToken())
	if out := answer("POST", "/api/v1/assets/d.feeds/partition-keys", "/api/v1/assets/{key}/partition-keys", `{"keys":["a","b"]}`); out["added"] != 2.0 {
		t.Fatalf("add keys: %v", out)
	}
	if out := answer("POST", "/api/v1/assets/d.feeds/partition-keys", "/api/v1/assets/{key}/partition-keys", `{"keys":["b","c"]}`); out["added"] != 1.0 {
		t.Fatalf("add keys again: %v", out)
	}
	env.UseWorkspaceFile(t, "assets:\n  d.feeds:\n    partitions: {dynamic: feeds}\n    executor: {demo: {duration: 1ms}}\n  r.one:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n")
	if out := answer("POST", "/api/v1/workspace/reload", "/api/v1/workspace/reload", ""); out["assets"] != 2.0 {
		t.Fatalf("reload: %v", out)
	}
}

// The callback of an asynchronous (HTTP 202) executor answers the documented
// RunCompleteAccepted shape.
func TestOpenAPIRunCompleteSchemaMatchesAnswer(t *testing.T) {
	t.Parallel()
	env, remote := testkit.WithAsyncRemote(t)
	_, answer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleOperator))
	answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["a.remote"],"selector":{"type":"explicit","keys":["2025-01-01"]}}`)
	work := remote.Next(t)
	out := answer("POST", "/api/v1/runs/"+work.RunID+"/complete", "/api/v1/runs/{id}/complete",
		`{"results":[{"partition":"2025-01-01","status":"materialized"}]}`)
	if out["run_id"] != work.RunID || out["accepted"] != true {
		t.Fatalf("callback answered %v", out)
	}
}
