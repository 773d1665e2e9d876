package handlers_test

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// apiRaw is one API request with its status, headers and decoded body.
var apiRaw = testkit.APIRequest

// A 201 (and the 200 of a replay) names the backfill's API address in
// Location, for create and retry-failed alike, and that address answers it.
func TestBackfillAPICreatedHasLocation(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: failingDailyWS})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	const body = `{"assets":["f.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-04"}}`
	check := func(name, path, body, key string, status int) string {
		t.Helper()
		resp, b := apiRaw(t, env.URL, tok, "POST", path, body, "Idempotency-Key", key)
		id, _ := b.(map[string]any)["id"].(string)
		if resp.StatusCode != status || id == "" {
			t.Fatalf("%s: %d %v", name, resp.StatusCode, b)
		}
		loc := resp.Header.Get("Location")
		if loc != "/api/v1/backfills/"+id {
			t.Errorf("%s: Location %q, want /api/v1/backfills/%s", name, loc, id)
		}
		got, gb := apiRaw(t, env.URL, tok, "GET", loc, "")
		if got.StatusCode != http.StatusOK || gb.(map[string]any)["id"] != id {
			t.Errorf("%s: GET %s: %d %v", name, loc, got.StatusCode, gb)
		}
		return id
	}
	parent := check("create", "/api/v1/backfills", body, "loc-1", http.StatusCreated)
	if again := check("replayed create", "/api/v1/backfills", body, "loc-1", http.StatusOK); again != parent {
		t.Fatalf("replay answered %s, not %s", again, parent)
	}
	apiWaitState(t, env, tok, parent, "FAILED")
	retry := "/api/v1/backfills/" + parent + "/retry-failed"
	child := check("retry-failed", retry, "", "r-1", http.StatusCreated)
	if again := check("replayed retry-failed", retry, "", "r-1", http.StatusOK); again != child || child == parent {
		t.Fatalf("retry replay answered %s, child %s, parent %s", again, child, parent)
	}
}

// apiTimeRe is the one shape of every time the API answers.
var apiTimeRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// apiTimes collects the values of time fields (…_at, at, since, not_before)
// anywhere in v, with their paths.
func apiTimes(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := path + "." + k
			if s, ok := e.(string); ok && (strings.HasSuffix(k, "_at") || k == "at" || k == "since" || k == "not_before") {
				out[p] = s
				continue
			}
			apiTimes(e, p, out)
		}
	case []any:
		for i, e := range x {
			apiTimes(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// Every time in every answer has the same shape: UTC, three fractional
// digits, so times compare as strings (jq 'select(.finished_at > $t)') in
// the order they happened. "…:45.98Z" sorted after "…:45.981Z" before.
func TestAPITimesHaveOneShape(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.Token(t, auth.RoleAdmin)
	_, b := apiRaw(t, env.URL, tok, "POST", "/api/v1/backfills", apiFeb)
	id := b.(map[string]any)["id"].(string)
	apiWaitState(t, env, tok, id, "SUCCEEDED")
	_, chunks := apiRaw(t, env.URL, tok, "GET", "/api/v1/backfills/"+id+"/chunks", "")
	run := chunks.(map[string]any)["chunks"].([]any)[0].(map[string]any)["id"].(string)
	// Whole seconds reported from outside: written with .000, not dropped.
	if resp, b := apiRaw(t, env.URL, tok, "POST", "/api/v1/materializations",
		`{"asset":"a.daily","partition":"2025-03-10","status":"materialized","at":"2025-03-11T01:00:00Z"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d %v", resp.StatusCode, b)
	}
	if resp, b := apiRaw(t, env.URL, tok, "POST", "/api/v1/assets/a.daily/watermark", `{"partition":"2025-03-10"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("watermark: %d %v", resp.StatusCode, b)
	}
	seen := map[string]string{}
	for _, c := range []struct{ tok, method, path, body string }{
		{tok, "GET", "/api/v1/backfills/" + id, ""},
		{tok, "GET", "/api/v1/backfills", ""},
		{tok, "GET", "/api/v1/backfills/" + id + "/chunks", ""},
		{tok, "GET", "/api/v1/backfills/" + id + "/events", ""},
		{tok, "GET", "/api/v1/runs/" + run, ""},
		{tok, "GET", "/api/v1/assets", ""},
		{tok, "GET", "/api/v1/assets/a.daily/partitions?limit=1000", ""},
		{tok, "GET", "/api/v1/assets/a.daily/partitions/2025-03-10/history", ""},
		{tok, "GET", "/api/v1/assets/a.daily/partitions/2025-03-10/history?at=2025-03-11T01:00:00.123456Z", ""},
		{tok, "GET", "/api/v1/assets/a.daily/watermark", ""},
		{tok, "POST", "/api/v1/assets/a.daily/watermark", `{"partition":"2025-03-10"}`},
		{tok, "GET", "/api/v1/status", ""},
		{admin, "POST", "/api/v1/assets/a.daily/partitions/2025-03-10/taint", `{"reason":"bad rows"}`},
		{admin, "GET", "/api/v1/users", ""},
		{admin, "GET", "/api/v1/tokens", ""},
	} {
		resp, b := apiRaw(t, env.URL, c.tok, c.method, c.path, c.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %v", c.method, c.path, resp.StatusCode, b)
		}
		apiTimes(b, c.method+" "+c.path, seen)
	}
	fields := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		fields[p[strings.LastIndex(p, ".")+1:]] = true
		if !apiTimeRe.MatchString(seen[p]) {
			t.Errorf("%s = %q, want the shape 2025-01-31T12:00:00.000Z", p, seen[p])
		}
	}
	for _, f := range []string{"created_at", "updated_at", "started_at", "finished_at", "at", "since", "set_at", "generated_at", "last_materialized_at", "last_used_at"} {
		if !fields[f] {
			t.Errorf("no %s was checked (fields seen: %v)", f, fields)
		}
	}
}
