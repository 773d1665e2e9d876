package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

var apiBackfillWS = testkit.Assets(
	testkit.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "retries: {max_attempts: 1}"),
)

func apiBFEnv(t *testing.T) (*testkit.Env, string) { return operatorEnv(t, apiBackfillWS) }

// operatorEnv is a server of the workspace ws whose engine runs every
// attempt as a no-op, with an operator's API token.
func operatorEnv(t *testing.T, ws string) (*testkit.Env, string) {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: ws})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	return env, env.Token(t, auth.RoleOperator)
}

// failingDailyWS is one daily asset of January 2025 whose every attempt
// fails, without retries.
var failingDailyWS = testkit.Assets(
	testkit.Asset("f.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
)

// apiCreate creates a backfill through POST /api/v1/backfills with body
// (and headers hdr) and returns the answer (t fails unless it is 201).
func apiCreate(t *testing.T, env *testkit.Env, tok, body string, hdr ...string) map[string]any {
	t.Helper()
	code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", body, hdr...)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, b)
	}
	return b
}

// apiEventsOfRun creates a backfill with body, waits until it is in state
// and returns the first page of its events (newest first).
func apiEventsOfRun(t *testing.T, env *testkit.Env, tok, body, state string) []map[string]any {
	t.Helper()
	id := apiCreate(t, env, tok, body)["id"].(string)
	apiWaitState(t, env, tok, id, state)
	_, evs := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id+"/events", "")
	var out []map[string]any
	for _, e := range evs["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func apiCountEvents(t *testing.T, env *testkit.Env) int64 {
	n, err := env.Store.CountEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func apiWaitState(t *testing.T, env *testkit.Env, tok, id string, states ...string) map[string]any {
	t.Helper()
	var b map[string]any
	// A generous bound: it returns as soon as the state is reached, and
	// `make test` runs packages side by side on 2 cores.
	testkit.Eventually(t, 2*time.Minute, fmt.Sprintf("backfill %s to be %v", id, states), func() bool {
		_, b = apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id, "")
		state, _ := b["state"].(string)
		return slices.Contains(states, state)
	})
	return b
}

const apiFeb = `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-02-01","end":"2025-02-28"},"chunk_size":7,"max_concurrent_runs":2,"title":"February"}`

func TestBackfillAPILifecycle(t *testing.T) {
	t.Parallel()
	env, tok := apiBFEnv(t)
	code, pv := apiCall(t, env, tok, "POST", "/api/v1/backfills/preview", apiFeb)
	if code != 200 || pv["total_partitions"].(float64) != 28 || pv["total_chunks"].(float64) != 4 {
		t.Fatalf("preview %d %v", code, pv)
	}
	code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", apiFeb, "Idempotency-Key", "req-1")
	if code != http.StatusCreated || b["state"] != "PENDING" || b["state_version"].(float64) != 1 || b["total_partitions"].(float64) != 28 ||
		b["selection"] != "range 2025-02-01 … 2025-02-28" {
		t.Fatalf("create %d %v", code, b)
	}
	for _, k := range []string{"succeeded", "failed", "running", "pending"} {
		if _, ok := b["counts"].(map[string]any)[k]; !ok {
			t.Errorf("counts lacks %s: %v", k, b["counts"])
		}
	}
	id := b["id"].(string)
	// Same key and body: the same backfill; same key, other body: 409.
	code, again := apiCall(t, env, tok, "POST", "/api/v1/backfills", apiFeb, "Idempotency-Key", "req-1")
	if code != 200 || again["id"] != id {
		t.Fatalf("idempotent create %d %v", code, again)
	}
	code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills", strings.Replace(apiFeb, `"chunk_size":7`, `"chunk_size":8`, 1), "Idempotency-Key", "req-1")
	if code != http.StatusConflict || e["error"].(map[string]any)["code"] != "conflict" {
		t.Fatalf("reused key %d %v", code, e)
	}
	done := apiWaitState(t, env, tok, id, "SUCCEEDED", "FAILED")
	if done["state"] != "SUCCEEDED" || done["counts"].(map[string]any)["succeeded"].(float64) != 4 || done["finished_at"] == nil {
		t.Fatalf("final %v", done)
	}
	code, ch := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id+"/chunks?limit=3", "")
	chunks := ch["chunks"].([]any)
	next, _ := ch["next_cursor"].(string)
	if code != 200 || len(chunks) != 3 || next == "" {
		t.Fatalf("chunks %d %v", code, ch)
	}
	first := chunks[0].(map[string]any)
	if first["run_key"] != "backfill:"+id+":chunk:0" || first["state"] != "succeeded" {
		t.Fatalf("chunk 0 %v", first)
	}
	_, rest := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id+"/chunks?cursor="+next, "")
	if len(rest["chunks"].([]any)) != 1 {
		t.Fatalf("second page %v", rest)
	}
	code, run := apiCall(t, env, tok, "GET", "/api/v1/runs/"+first["id"].(string), "")
	if code != 200 || len(run["attempt_list"].([]any)) != 1 {
		t.Fatalf("run %d %v", code, run)
	}
	// Times are RFC 3339 everywhere in the API, chunks, runs and attempts too.
	att := run["attempt_list"].([]any)[0].(map[string]any)
	for what, v := range map[string]any{"chunk created_at": first["created_at"], "chunk finished_at": first["finished_at"], "run started_at": run["started_at"],
		"attempt started_at": att["started_at"], "attempt finished_at": att["finished_at"]} {
		if s, ok := v.(string); !ok {
			t.Errorf("%s is %v, not a string", what, v)
		} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Errorf("%s %q: %v", what, s, err)
		}
	}
	code, evs := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id+"/events", "")
	if code != 200 || len(evs["events"].([]any)) < 3 {
		t.Fatalf("events %d %v", code, evs)
	}
	// Payloads in answers: times as RFC 3339, the selection as JSON, and not
	// the creator's Idempotency-Key.
	for _, e := range evs["events"].([]any) {
		ev := e.(map[string]any)
		p := ev["payload"].(map[string]any)
		if at, ok := p["at"]; ok {
			if s, _ := at.(string); !strings.HasSuffix(s, "Z") {
				t.Errorf("%s payload at = %v, want an RFC 3339 time", ev["type"], at)
			}
		}
		if ev["type"] != "backfill.created" {
			continue
		}
		bf := p["backfill"].(map[string]any)
		if _, ok := bf["request_key"]; ok || strings.Contains(fmt.Sprint(p), "req-1") {
			t.Errorf("backfill.created payload shows the Idempotency-Key: %v", bf)
		}
		if _, ok := bf["assets"].([]any); !ok {
			t.Errorf("backfill.created assets = %#v, want a JSON array", bf["assets"])
		}
		if s, _ := bf["created_at"].(string); !strings.HasSuffix(s, "Z") {
			t.Errorf("backfill.created created_at = %v, want an RFC 3339 time", bf["created_at"])
		}
	}
	code, list := apiCall(t, env, tok, "GET", "/api/v1/backfills?state=SUCCEEDED", "")
	if code != 200 || len(list["backfills"].([]any)) != 1 {
		t.Fatalf("list %d %v", code, list)
	}
	code, cf := apiCall(t, env, tok, "GET", "/api/v1/conflicts", "")
	if code != 200 || len(cf["conflicts"].([]any)) != 0 {
		t.Fatalf("conflicts %d %v", code, cf)
	}
	// Refused transitions name both states; nothing is written.
	before := apiCountEvents(t, env)
	code, e = apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/resume", "")
	msg, _ := e["error"].(map[string]any)["message"].(string)
	if code != http.StatusConflict || !strings.Contains(msg, "SUCCEEDED") || !strings.Contains(msg, "PAUSED") {
		t.Fatalf("resume a finished backfill: %d %v", code, e)
	}
	code, e = apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/cancel", `{"expected_state_version": 1}`)
	if msg := fmt.Sprint(e["error"].(map[string]any)["message"]); code != http.StatusConflict || !strings.Contains(msg, "(state SUCCEEDED), not 1") ||
		!strings.Contains(msg, "GET /api/v1/backfills/"+id+" and, if the action still applies, send its state_version") {
		t.Fatalf("stale expected_state_version: %d %v", code, e)
	}
	code, _ = apiCall(t, env, tok, "POST", "/api/v1/backfills/bf_nope/pause", "")
	if code != http.StatusNotFound {
		t.Fatalf("unknown backfill: %d", code)
	}
	// Complete: unknown run 404, finished run 409.
	if code, _ = apiCall(t, env, tok, "POST", "/api/v1/runs/run_nope/complete", `{}`); code != http.StatusNotFound {
		t.Fatalf("complete unknown run: %d", code)
	}
	if code, _ = apiCall(t, env, tok, "POST", "/api/v1/runs/"+first["id"].(string)+"/complete", `{}`); code != http.StatusConflict {
		t.Fatalf("complete finished run: %d", code)
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("refused requests wrote %d events", after-before)
	}
	// Keys are scoped to their sender: another user's req-1 is a new request.
	other := env.Token(t, auth.RoleOperator)
	code, theirs := apiCall(t, env, other, "POST", "/api/v1/backfills", apiFeb, "Idempotency-Key", "req-1")
	if code != http.StatusCreated || theirs["id"] == id {
		t.Fatalf("another user's key: %d %v", code, theirs)
	}
	apiWaitState(t, env, other, theirs["id"].(string), "SUCCEEDED", "FAILED")
}

func TestBackfillAPIBadInput(t *testing.T) {
	t.Parallel()
	testkit.SkipInRacePass(t) // refusals, one request after another (the race pass has concurrent creates elsewhere)
	env, tok := apiBFEnv(t)
	keys := make([]string, jobs.MaxExplicitKeys+1)
	for i := range keys {
		keys[i] = "2025-01-01"
	}
	big, _ := json.Marshal(map[string]any{"assets": []string{"a.daily"}, "selector": map[string]any{"type": "explicit", "keys": keys}, "chunk_size": 1, "max_concurrent_runs": 1})
	cases := []struct{ name, body, field, msg string }{
		{"chunk_size 0", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":0,"max_concurrent_runs":1}`, "chunk_size", ""},
		{"chunk_size negative", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":-3,"max_concurrent_runs":1}`, "chunk_size", ""},
		{"chunk_size too big", fmt.Sprintf(`{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":%d,"max_concurrent_runs":1}`, jobs.MaxChunkSize+1), "chunk_size", ""},
		{"max_concurrent_runs 0", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":0}`, "max_concurrent_runs", ""},
		{"end before start", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-02-10","end":"2025-02-01"},"chunk_size":1,"max_concurrent_runs":1}`, "selector.end", ""},
		{"key outside the scheme", `{"assets":["a.daily"],"selector":{"type":"range","start":"2024-02-10","end":"2025-02-01"},"chunk_size":1,"max_concurrent_runs":1}`, "selector.start", ""},
		{"unknown asset", `{"assets":["nope"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`, "assets[0]", ""},
		{"empty selection", `{"assets":["a.daily"],"selector":{"type":"filter","statuses":["failed"]},"chunk_size":1,"max_concurrent_runs":1}`, "selector", ""},
		{"explicit over the limit", string(big), "selector.keys", ""},
		{"unknown field", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1,"chunks":3}`, "chunks", "the fields there are assets, selector, chunk_size"},
		{"unknown selector field", `{"assets":["a.daily"],"selector":{"type":"range","from":"2025-01-01"},"chunk_size":1,"max_concurrent_runs":1}`, "selector.from", "the fields there are type, start, end"},
		{"not JSON", `{"assets":`, "", ""},
		// Wrong JSON types name the field and the type to send, not Go's.
		{"chunk_size a string", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":"7","max_concurrent_runs":1}`, "chunk_size", "chunk_size must be an integer, not a JSON string"},
		{"chunk_size a fraction", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":7.5,"max_concurrent_runs":1}`, "chunk_size", "must be an integer, not a JSON number 7.5"},
		{"chunk_size out of range", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":99999999999999999999,"max_concurrent_runs":1}`, "chunk_size", "chunk_size is out of range"},
		{"assets a string", `{"assets":"a.daily","selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`, "assets", "assets must be an array"},
		{"body an array", `[]`, "", "the body must be an object, not a JSON array"},
		{"a key a number", `{"assets":["a.daily"],"selector":{"type":"explicit","keys":["2025-01-01",3]},"chunk_size":1,"max_concurrent_runs":1}`, "selector.keys[1]", "selector.keys[1] must be a string, not a JSON number"},
		{"a second asset a number", `{"assets":["a.daily",5],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`, "assets[1]", "assets[1] must be a string"},
		// A field the selector's type does not use is refused, not ignored.
		{"statuses on a range", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-05","end":"2025-01-06","statuses":["failed"]},"chunk_size":1,"max_concurrent_runs":1}`, "selector.statuses", `does not apply to a range selector, which takes start, end; to select by status or dimension use {"type": "filter"}`},
		{"dimensions on a range", `{"assets":["a.daily"],"selector":{"type":"range","dimensions":{"region":["eu"]}},"chunk_size":1,"max_concurrent_runs":1}`, "selector.dimensions", "does not apply to a range selector"},
		{"start on an explicit list", `{"assets":["a.daily"],"selector":{"type":"explicit","keys":["2025-01-01"],"start":"2025-01-01"},"chunk_size":1,"max_concurrent_runs":1}`, "selector.start", "does not apply to an explicit selector, which takes keys"},
		{"keys on a filter", `{"assets":["a.daily"],"selector":{"type":"filter","statuses":["missing"],"keys":["2025-01-01"]},"chunk_size":1,"max_concurrent_runs":1}`, "selector.keys", `to list keys use {"type": "explicit"}`},
		{"null body", `null`, "", "the body must be a JSON object, not null"},
		// encoding/json alone would let "Assets" replace "assets", and the last
		// of two "start" keys win.
		{"a field in another case", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1,"Assets":["x"]}`, "Assets", `unknown field "Assets" (field names are case-sensitive); the fields there are assets, selector`},
		{"a field twice", `{"assets":["a.daily"],"assets":["x"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`, "assets", `field "assets" appears more than once in the same object`},
		{"a selector field twice", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03","start":"2025-01-02"},"chunk_size":1,"max_concurrent_runs":1}`, "selector.start", `field "selector.start" appears more than once`},
		// A null in a list is not the empty string.
		{"a null key", `{"assets":["a.daily"],"selector":{"type":"explicit","keys":["2025-01-01",null]},"chunk_size":1,"max_concurrent_runs":1}`, "selector.keys[1]", "selector.keys[1] must be a string, not null"},
		{"a null asset", `{"assets":[null],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`, "assets[0]", "assets[0] must be a string, not null"},
		{"a title with a terminal escape", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1,"title":"a\u001b[31mred"}`, "title", "title holds a control character (U+001B at byte 1)"},
		{"a title over 200 characters", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1,"title":"` + strings.Repeat("é", 201) + `"}`, "title", "title is 201 characters long; at most 200"},
		{"a dimension value a number", `{"assets":["a.daily"],"selector":{"type":"filter","dimensions":{"region":["eu",7]}},"chunk_size":1,"max_concurrent_runs":1}`, "selector.dimensions.region[1]", "must be a string, not a JSON number"},
	}
	// 200 characters of two bytes each is a title, not 400 bytes too many.
	if code, v := apiCall(t, env, tok, "POST", "/api/v1/backfills/preview", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"},"chunk_size":1,"max_concurrent_runs":1,"title":"`+strings.Repeat("é", 200)+`"}`); code != 200 {
		t.Errorf("a title of 200 accented letters: %d %v", code, v)
	}
	before := apiCountEvents(t, env)
	for _, c := range cases {
		for _, path := range []string{"/api/v1/backfills", "/api/v1/backfills/preview"} {
			code, e := apiCall(t, env, tok, "POST", path, c.body)
			er, _ := e["error"].(map[string]any)
			msg, _ := er["message"].(string)
			if code != http.StatusBadRequest || er["field"] != nilIfEmpty(c.field) || msg == "" || !strings.Contains(msg, c.msg) {
				t.Errorf("%s %s: %d %v", c.name, path, code, e)
			}
		}
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("bad input wrote %d events", after-before)
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	if n := len(list["backfills"].([]any)); n != 0 {
		t.Fatalf("bad input created %d backfills", n)
	}
	if code, _ := apiCall(t, env, tok, "GET", "/api/v1/backfills?state=DONE", ""); code != 400 {
		t.Fatalf("bad state filter: %d", code)
	}
}

// TestCanceledBackfillCountsNothingPending: once canceled, chunks and
// partitions that will never run are counted as canceled, not pending.
func TestCanceledBackfillCountsNothingPending(t *testing.T) {
	t.Parallel()
	// Chunks of about a second, one at a time: the cancel lands while the first runs.
	env := testkit.New(t, testkit.Options{WorkspaceYAML: strings.Replace(apiBackfillWS, "duration: 1ms", "duration: 150ms", 1)})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	b := apiCreate(t, env, tok, strings.Replace(apiFeb, `"max_concurrent_runs":2`, `"max_concurrent_runs":1`, 1))
	id := b["id"].(string)
	if code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/cancel", ""); code != http.StatusOK {
		t.Fatalf("cancel: %d %v", code, b)
	}
	b = apiWaitState(t, env, tok, id, "CANCELED")
	counts, parts := b["counts"].(map[string]any), b["partitions"].(map[string]any)
	if counts["pending"].(float64) != 0 || counts["queued"].(float64) != 0 || counts["running"].(float64) != 0 ||
		counts["succeeded"].(float64)+counts["canceled"].(float64) != 4 || counts["canceled"].(float64) == 0 {
		t.Fatalf("counts of a canceled backfill: %v", counts)
	}
	if parts["pending"].(float64) != 0 || parts["materialized"].(float64)+parts["canceled"].(float64) != 28 || parts["canceled"].(float64) == 0 {
		t.Fatalf("partitions of a canceled backfill: %v", parts)
	}
}

// TestBackfillEventsSaySummaries: every event of the timeline carries a
// sentence: what was created, planned, started, how attempts ended (with
// retries queued and the first error) and the transitions.
func TestBackfillEventsSaySummaries(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("a.broken", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 2, backoff: 5ms}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
	)
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	var got []string
	for _, m := range apiEventsOfRun(t, env, tok, `{"assets":["a.broken"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"chunk_size":3,"max_concurrent_runs":1}`, "FAILED") {
		got = append(got, m["type"].(string)+": "+m["summary"].(string))
	}
	slices.Reverse(got)
	want := []string{
		"backfill.created: Created: 3 partitions in 1 chunk",
		"backfill.state: PENDING → RUNNING",
		"runs.planned: Chunk 0 planned",
		"attempts.started: 1 attempt started (3 partitions)",
		"attempts.finished: 1 attempt finished: 1 failed; 1 retry queued — demo: 3 of 3 partitions failed",
		"attempts.started: Attempt 2 of run_", // then the run id
		"attempts.finished: 1 attempt finished: 1 failed — demo: 3 of 3 partitions failed",
		"backfill.state: RUNNING → FAILED",
	}
	if len(got) != len(want) {
		t.Fatalf("events:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] && (i != 5 || !strings.HasPrefix(got[i], want[i])) {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
	if !strings.HasSuffix(got[5], "started (3 partitions)") {
		t.Errorf("retry attempt: %q", got[5])
	}
}

// TestBackfillMetrics: /metrics reports backfills by state, active runs, the
// runs and partitions backfills finished, and attempt durations.
func TestBackfillMetrics(t *testing.T) {
	t.Parallel()
	env, tok := apiBFEnv(t)
	b := apiCreate(t, env, tok, apiFeb)
	apiWaitState(t, env, tok, b["id"].(string), "SUCCEEDED")
	// Attempts are observed just after their end is committed: poll briefly.
	var body []byte
	testkit.Eventually(t, 20*time.Second, "the 4 attempts in /metrics", func() bool {
		_, body = env.GetBody(t, "/metrics")
		return strings.Contains(string(body), `tessera_attempt_duration_seconds_count{asset="a.daily",state="succeeded"} 4`)
	})
	for _, want := range []string{
		`tessera_backfills{state="SUCCEEDED"} 1`, `tessera_backfills{state="RUNNING"} 0`,
		`tessera_runs_active{state="running"} 0`, `tessera_runs_active{state="queued"} 0`,
		`tessera_backfill_runs_finished_total{state="succeeded"} 4`, `tessera_backfill_runs_finished_total{state="failed"} 0`,
		`tessera_backfill_partitions_finished_total{outcome="materialized"} 28`,
		`tessera_attempt_duration_seconds_count{asset="a.daily",state="succeeded"} 4`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestRetryFailedAPIValidatesAndCountsAddUp: retry-failed refuses settings
// out of range and a stale expected_state_version, writing nothing; the
// chunk counts of every backfill add up to total_chunks.
func TestRetryFailedAPIValidatesAndCountsAddUp(t *testing.T) {
	t.Parallel()
	env, tok, b := apiBackfillEnv(t, failingDailyWS,
		`{"assets":["f.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-06"},"chunk_size":2,"max_concurrent_runs":1}`)
	apiCountsAddUp(t, b)
	id := b["id"].(string)
	parent := apiWaitState(t, env, tok, id, "FAILED")
	apiCountsAddUp(t, parent)
	version := int64(parent["state_version"].(float64))
	before := apiCountEvents(t, env)
	for _, c := range []struct{ body, field, msg, key string }{
		{`{"chunk_size":0}`, "chunk_size", "leave it out to keep the parent's", ""},
		{`{"max_concurrent_runs":0}`, "max_concurrent_runs", "between 1 and", ""},
		{`{"max_concurrent_runs":100000}`, "max_concurrent_runs", "between 1 and 10000", ""},
		{`{"expected_state_version":0}`, "expected_state_version", "positive number", ""},
		{fmt.Sprintf(`{"retry_request_id":%q}`, strings.Repeat("x", 201)), "retry_request_id", "at most 200", ""},
		{`{"retry_request_id":""}`, "retry_request_id", "retry_request_id is empty", ""},
		// Two different ids for one request: which would it be?
		{`{"retry_request_id":"x1"}`, "retry_request_id", `retry_request_id "x1" and the Idempotency-Key header "x9" differ`, "x9"},
	} {
		var hdr []string
		if c.key != "" {
			hdr = []string{"Idempotency-Key", c.key}
		}
		code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", c.body, hdr...)
		er, _ := e["error"].(map[string]any)
		if code != http.StatusBadRequest || er["field"] != c.field || !strings.Contains(fmt.Sprint(er["message"]), c.msg) {
			t.Errorf("%s: %d %v", c.body, code, e)
		}
	}
	code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", fmt.Sprintf(`{"expected_state_version":%d}`, version-1))
	if code != http.StatusConflict || e["error"].(map[string]any)["field"] != "expected_state_version" {
		t.Errorf("stale version: %d %v", code, e)
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("refused retry-failed requests wrote %d events", after-before)
	}
	body := fmt.Sprintf(`{"retry_request_id":"r1","expected_state_version":%d,"chunk_size":3}`, version)
	code, child := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", body)
	if code != http.StatusCreated || child["parent_backfill_id"] != id || child["chunk_size"].(float64) != 3 || child["total_partitions"].(float64) != 6 ||
		child["selection"] != "the failed and upstream-failed partitions of "+id {
		t.Fatalf("retry-failed: %d %v", code, child)
	}
	apiCountsAddUp(t, child)
	if code, again := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", body); code != http.StatusOK || again["id"] != child["id"] {
		t.Fatalf("same retry_request_id: %d %v", code, again)
	}
	// The same retry_request_id with other settings is another request: 409,
	// as a reused Idempotency-Key; with none, the same child.
	backfills := func() int {
		_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
		return len(list["backfills"].([]any))
	}
	n := backfills()
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"retry_request_id":"r1","chunk_size":4}`, http.StatusConflict},
		{`{"retry_request_id":"r1","max_concurrent_runs":9}`, http.StatusConflict},
		{`{"retry_request_id":"r1","chunk_size":3}`, http.StatusOK},
		{`{"retry_request_id":"r1"}`, http.StatusOK},
	} {
		code, out := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", c.body)
		if code != c.status {
			t.Errorf("%s: %d %v, want %d", c.body, code, out, c.status)
		} else if code == http.StatusOK && out["id"] != child["id"] {
			t.Errorf("%s: answered %v, not the child %v", c.body, out["id"], child["id"])
		} else if er, _ := out["error"].(map[string]any); code == http.StatusConflict &&
			(er["field"] != "retry_request_id" || !strings.Contains(fmt.Sprint(er["message"]), "a new retry_request_id")) {
			t.Errorf("%s: error %v", c.body, er)
		}
	}
	if after := backfills(); after != n {
		t.Fatalf("refused or replayed retry-failed requests created %d backfills", after-n)
	}
	apiCountsAddUp(t, apiWaitState(t, env, tok, child["id"].(string), "FAILED"))
}

// apiCountsAddUp checks that a backfill's chunk counts add up to its chunks.
func apiCountsAddUp(t *testing.T, b map[string]any) {
	t.Helper()
	var sum float64
	for _, n := range b["counts"].(map[string]any) {
		sum += n.(float64)
	}
	if sum != b["total_chunks"].(float64) {
		t.Errorf("counts %v add up to %v, not total_chunks %v", b["counts"], sum, b["total_chunks"])
	}
}

// An event too big for the API (an attempts event of a big chunk) answers
// {"truncated": true} with its summary; small ones keep their payload.
func TestBackfillEventsTruncateBigPayloads(t *testing.T) {
	testkit.SkipInRacePass(t)
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("a.daily", "{daily: {start: 2015-01-01, end: 2025-01-01}}"),
	)
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	var big, small int
	for _, m := range apiEventsOfRun(t, env, tok, `{"assets":["a.daily"],"selector":{"type":"range","start":"2015-01-01","end":"2024-12-31"},"chunk_size":3000,"max_concurrent_runs":1}`, "SUCCEEDED") {
		p := m["payload"].(map[string]any)
		// about 30 bytes a partition: 3,000 partitions are over 64 KiB
		if m["type"] == "attempts.started" && strings.Contains(m["summary"].(string), "(3,000 partitions)") {
			if p["truncated"] != true {
				t.Errorf("the 3,000-partition attempts.started event is not truncated: %.200v", p)
			}
			big++
		}
		if m["type"] == "backfill.state" {
			if p["truncated"] == true || p["to"] == nil {
				t.Errorf("backfill.state payload %v", p)
			}
			small++
		}
	}
	if big == 0 || small == 0 {
		t.Fatalf("%d big and %d small events", big, small)
	}
}

// chunk_size and max_concurrent_runs may be left out of a preview or a
// create: they take the documented defaults (the form's). A value that is
// sent, 0 included, is still checked, and a refused one writes nothing.
func TestBackfillAPIDefaultsChunkSizeAndConcurrency(t *testing.T) {
	t.Parallel()
	testkit.SkipInRacePass(t) // defaults and refusals, one request after another, a server per case
	const sel = `"assets":["a.daily"],"selector":{"type":"range","start":"2025-02-01","end":"2025-02-10"}`
	for _, c := range []struct {
		name, extra     string
		chunk, conc     float64
		chunks, refused float64
		field, msg      string
	}{
		{name: "both left out", chunk: jobs.DefaultChunkSize, conc: jobs.DefaultMaxConcurrentRuns, chunks: 10},
		{name: "chunk_size left out", extra: `,"max_concurrent_runs":3`, chunk: jobs.DefaultChunkSize, conc: 3, chunks: 10},
		{name: "max_concurrent_runs left out", extra: `,"chunk_size":5`, chunk: 5, conc: jobs.DefaultMaxConcurrentRuns, chunks: 2},
		{name: "chunk_size 0", extra: `,"chunk_size":0`, field: "chunk_size", msg: "got 0; leave it out for the default, 1"},
		{name: "chunk_size negative", extra: `,"chunk_size":-2`, field: "chunk_size", msg: "between 1 and 100000, got -2"},
		{name: "chunk_size above the maximum", extra: fmt.Sprintf(`,"chunk_size":%d`, jobs.MaxChunkSize+1), field: "chunk_size", msg: "between 1 and 100000"},
		{name: "max_concurrent_runs 0", extra: `,"max_concurrent_runs":0`, field: "max_concurrent_runs", msg: "got 0; leave it out for the default, 4"},
		{name: "max_concurrent_runs negative", extra: `,"max_concurrent_runs":-1`, field: "max_concurrent_runs", msg: "between 1 and 10000, got -1"},
		{name: "max_concurrent_runs above the maximum", extra: fmt.Sprintf(`,"max_concurrent_runs":%d`, jobs.MaxConcurrentRunsCap+1), field: "max_concurrent_runs", msg: "between 1 and 10000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case on its own server: the runs of an earlier case's
			// backfill would write events while a refused one is checked.
			env, tok := apiBFEnv(t)
			body := "{" + sel + c.extra + "}"
			before := apiCountEvents(t, env)
			code, pv := apiCall(t, env, tok, "POST", "/api/v1/backfills/preview", body)
			code2, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", body)
			if c.field != "" {
				for what, r := range map[string]map[string]any{"preview": pv, "create": b} {
					er, _ := r["error"].(map[string]any)
					if er["field"] != c.field || !strings.Contains(fmt.Sprint(er["message"]), c.msg) {
						t.Errorf("%s: %v, want field %s and a message with %q", what, r, c.field, c.msg)
					}
				}
				if code != http.StatusBadRequest || code2 != http.StatusBadRequest {
					t.Fatalf("preview %d, create %d; want 400", code, code2)
				}
				if after := apiCountEvents(t, env); after != before {
					t.Fatalf("a refused request wrote %d events", after-before)
				}
				return
			}
			if code != http.StatusOK || pv["total_chunks"] != c.chunks {
				t.Fatalf("preview %d %v", code, pv)
			}
			if code2 != http.StatusCreated || b["chunk_size"] != c.chunk || b["max_concurrent_runs"] != c.conc || b["total_chunks"] != c.chunks {
				t.Fatalf("create %d %v", code2, b)
			}
			code, got := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+b["id"].(string), "")
			if code != http.StatusOK || got["chunk_size"] != c.chunk || got["max_concurrent_runs"] != c.conc {
				t.Fatalf("get %d %v", code, got)
			}
		})
	}
}

// TestBackfillSaysWhatItsNextChunkWaitsFor: a running backfill none of
// whose runs runs, held by its pool's throttle, says so — in the API's
// waiting, and on its page instead of a bare "ETA unknown yet", which then
// refreshes itself. Before, it read RUNNING with 0 running, 0 queued and
// chunks pending, and nothing said why (found by the API audit).
func TestBackfillSaysWhatItsNextChunkWaitsFor(t *testing.T) {
	t.Parallel()
	env, tok, b := apiBackfillEnv(t, testkit.ThrottledWorkspace,
		`{"assets":["t.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"chunk_size":1,"max_concurrent_runs":2}`)
	id := b["id"].(string)
	var got map[string]any
	testkit.Eventually(t, 20*time.Second, "the first chunk to succeed and the throttle to hold the next", func() bool {
		_, got = apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id, "")
		return got["counts"].(map[string]any)["succeeded"] == float64(1)
	})
	w, _ := got["waiting"].(map[string]any)
	if reason, _ := w["reason"].(string); !strings.Contains(reason, "chunk 1 waits for pool wh: its throttle (1 run per 1 h 0 min) has no run left") {
		t.Fatalf("waiting %v, want chunk 1 held by pool wh's throttle", got["waiting"])
	}
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+id)
	if eta := doc.Find(`[data-testid="eta"]`).Text(); !strings.Contains(eta, "unknown yet: chunk 1 waits for pool wh") {
		t.Errorf("page ETA %q, want what the next chunk waits for", eta)
	}
	if trig := doc.Find(`[data-testid="backfill-summary"]`).AttrOr("hx-trigger", ""); trig != "sse:update, every 5s" {
		t.Errorf("summary hx-trigger %q while held by the throttle, want sse:update, every 5s", trig)
	}
	// A backfill that runs says nothing of the kind.
	if code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/pause", ""); code != http.StatusOK {
		t.Fatalf("pause %d %v", code, b)
	}
	if _, got = apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id, ""); got["waiting"] != nil {
		t.Errorf("a paused backfill's waiting: %v, want none", got["waiting"])
	}
}

// apiBackfillEnv starts a server with workspace and its engine, and creates
// a backfill with body through the API as an operator: the env, the
// operator's token and the backfill's answer.
func apiBackfillEnv(t *testing.T, workspace, body string) (*testkit.Env, string, map[string]any) {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: workspace})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	b := apiCreate(t, env, tok, body)
	return env, tok, b
}
