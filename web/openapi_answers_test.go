package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/web"
)

// schemaChecker checks JSON answers against the served OpenAPI document's
// component schemas: every key an answer has is documented, every key the
// schema requires is there, a null only where the schema allows one, and
// the JSON type is the documented one — recursively, through $ref, arrays
// and additionalProperties.
type schemaChecker struct {
	t       *testing.T
	schemas map[string]any
}

func (sc schemaChecker) check(where string, v any, schema map[string]any) {
	sc.t.Helper()
	if r, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		s, ok := sc.schemas[name].(map[string]any)
		if !ok {
			sc.t.Errorf("%s: $ref %s is not a schema", where, r)
			return
		}
		schema = s
	}
	if _, ok := schema["oneOf"]; ok {
		return // not used by the answers checked here
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
		sc.t.Errorf("%s: a JSON %s (%v), documented as %v", where, jsonType, v, types)
		return
	}
	if e, ok := schema["enum"].([]any); ok && v != nil && !slices.Contains(e, v) {
		sc.t.Errorf("%s: %v is not one of the documented %v", where, v, e)
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
			sc.t.Errorf("%s: documented as an object with no properties; the answer has %v", where, slices.Sorted(maps.Keys(x)))
			return
		}
		for k, val := range x {
			switch p, ok := props[k].(map[string]any); {
			case ok:
				sc.check(where+"."+k, val, p)
			case extra != nil:
				sc.check(where+"."+k, val, extra)
			case props != nil || schema["additionalProperties"] == false:
				sc.t.Errorf("%s: the answer has %q, which the schema does not document", where, k)
			}
		}
		req, _ := schema["required"].([]any)
		for _, k := range req {
			if _, ok := x[k.(string)]; !ok {
				sc.t.Errorf("%s: the schema requires %q, which the answer lacks", where, k)
			}
		}
	}
}

// The documented schemas of the backfill, preview, run, chunk and conflict
// answers describe what the handlers answer, key by key.
func TestOpenAPISchemasMatchAnswers(t *testing.T) {
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `
assets:
  ok.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 1ms}}
  f.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms, failure_rate: 1}}
  slow.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 1h}}
`})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, handlers.RoleOperator)
	resp, err := http.Get(env.URL + "/api/v1/openapi.json")
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
	call := func(method, path, body string) (int, any) {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, out
	}
	// answer calls an endpoint and checks its answer against the schema the
	// document gives for that operation's success status.
	answer := func(method, path, docPath, body string) map[string]any {
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
	waitState := func(id string, states ...string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, b := call("GET", "/api/v1/backfills/"+id, "")
			if slices.Contains(states, fmt.Sprint(b.(map[string]any)["state"])) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("backfill %s is %v, want %v", id, b.(map[string]any)["state"], states)
			}
			time.Sleep(10 * time.Millisecond)
		}
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
	if _, err := env.Store.W.Exec(`INSERT INTO conflicts (run_key, backfill_id, existing_fingerprint, requested_fingerprint, at) VALUES (?,?,?,?,?)`,
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
