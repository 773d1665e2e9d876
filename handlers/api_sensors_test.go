package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// sensorWS declares a push sensor (arrivals), a poll sensor whose command
// answers the cursor plus one with a request of eu under run key k{n}
// (counter), and one whose command fails (broken), on a static asset.
func sensorWS(t *testing.T) string {
	t.Helper()
	counter := testkit.CounterEvaluator(t)
	broken := testkit.Script(t, "broken.sh", "echo 'no upstream' >&2\nexit 3\n")
	return fmt.Sprintf(`
assets:
  t.regions:
    partitions: {static: [eu, us, ap]}
    executor: {demo: {duration: 1ms}}
  t.other:
    partitions: {static: [x]}
    executor: {demo: {duration: 1ms}}
sensors:
  arrivals:
    assets: [t.regions]
  counter:
    assets: [t.regions]
    evaluator: {command: [%q]}
    interval: 1h
    timeout: 10s
  broken:
    assets: [t.regions]
    evaluator: {command: [%q]}
    interval: 1h
`, counter, broken)
}

// apiRefused checks that the answer code, body of a request (what) is an
// error of status, on field ("": any), whose message says every one of
// msgs; it reports what differs and says whether the status and field
// were right.
func apiRefused(t *testing.T, what string, code int, body map[string]any, status int, field string, msgs ...string) bool {
	t.Helper()
	e, _ := body["error"].(map[string]any)
	if code != status || e == nil || (field != "" && e["field"] != field) {
		t.Errorf("%s: %d %v; want %d on field %q", what, code, body, status, field)
		return false
	}
	for _, m := range msgs {
		if !strings.Contains(fmt.Sprint(e["message"]), m) {
			t.Errorf("%s: message %q lacks %q", what, e["message"], m)
		}
	}
	return true
}

// sensorRefused sends a request that must be refused (see apiRefused) and
// checks that it wrote nothing (sensorWrites).
func sensorRefused(t *testing.T, env *testkit.Env, tok, what, method, path, body string, status int, field string, msgs ...string) {
	t.Helper()
	before := sensorWrites(t, env)
	code, answer := apiCall(t, env, tok, method, path, body)
	if !apiRefused(t, what, code, answer, status, field, msgs...) {
		return
	}
	if after := sensorWrites(t, env); after != before {
		t.Errorf("%s wrote: %s -> %s", what, before, after)
	}
}

// sensorEnv is a server with the engine and the sensors (their loop does
// not run: the tests evaluate), with an operator's token.
func sensorEnv(t *testing.T) (*testkit.Env, *jobs.Sensors, string) {
	t.Helper()
	env, tok := operatorEnv(t, sensorWS(t))
	return env, env.StartSensors(t), tok
}

// sensorWrites is everything a sensor request could write, as text: the
// events, evaluations, run keys, the states' counters and cursors, and the
// backfills.
func sensorWrites(t *testing.T, env *testkit.Env) string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT COUNT(*) FROM sensor_events`, `SELECT COUNT(*) FROM sensor_evaluations`, `SELECT COUNT(*) FROM sensor_run_keys`, `SELECT COUNT(*) FROM backfills`,
		`SELECT COALESCE(group_concat(name || paused || COALESCE(cursor, '-') || state_version || events_accepted || launches || evaluations, ','), '') FROM sensor_state`,
	} {
		var v string
		if err := env.Store.RawReader().GetContext(t.Context(), &v, q); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return strings.Join(out, "|")
}

// TestSensorAPIList: every sensor with its definition (push, or poll with
// its evaluator) and its state before anything happened.
func TestSensorAPIList(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	code, body := apiCall(t, env, env.Token(t, auth.RoleViewer), "GET", "/api/v1/sensors", "")
	if code != 200 {
		t.Fatalf("%d %v", code, body)
	}
	list := body["sensors"].([]any)
	if len(list) != 3 {
		t.Fatalf("%d sensors: %v", len(list), list)
	}
	push, poll := list[0].(map[string]any), list[1].(map[string]any)
	if push["name"] != "arrivals" || push["kind"] != "push" || push["evaluator"] != nil || push["enabled"] != true || push["last_event"] != nil ||
		push["chunk_size"].(float64) != float64(jobs.DefaultChunkSize) || fmt.Sprint(push["assets"]) != "[t.regions]" {
		t.Fatalf("push sensor: %v", push)
	}
	ev := poll["evaluator"].(map[string]any)
	if poll["name"] != "counter" || poll["kind"] != "poll" || ev["kind"] != "command" || ev["interval"] != "1h" || ev["timeout"] != "10s" {
		t.Fatalf("poll sensor: %v", poll)
	}
	st := poll["state"].(map[string]any)
	if st["paused"] != false || st["status"] != "ok" || st["cursor"] != nil || st["evaluations"].(float64) != 0 || st["last_evaluated_at"] != nil {
		t.Fatalf("state of a sensor never evaluated: %v", st)
	}
	// The command is not shown: it may hold secrets.
	if raw, _ := json.Marshal(poll); strings.Contains(string(raw), "counter.sh") {
		t.Fatalf("the evaluator's command leaked: %s", raw)
	}
	code, one := apiCall(t, env, tok, "GET", "/api/v1/sensors/counter", "")
	if code != 200 || one["name"] != "counter" {
		t.Fatalf("get: %d %v", code, one)
	}
}

// TestSensorAPIPush: an event launches a backfill created by the sensor
// (201, Location); the same message_id answers 200 with the first outcome
// and launches nothing; the events list and the counters show it. A token
// of the operator role (an admin's, narrowed) is what a pipeline needs.
func TestSensorAPIPush(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	admin := env.CreateUser(t, "pipeline-owner", auth.RoleAdmin, testkit.TestPassword)
	tok := env.TokenFor(t, admin, "operator")
	resp, out := testkit.APIRequest(t, env.URL, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m-1", "partitions": ["eu", "us"]}`, "Content-Type", "application/json")
	body := out.(map[string]any)
	if resp.StatusCode != 201 || body["replayed"] != false {
		t.Fatalf("first push: %d %v", resp.StatusCode, body)
	}
	bf := body["backfill"].(map[string]any)
	ev := body["event"].(map[string]any)
	if bf["created_by"] != "sensor:arrivals" || bf["total_partitions"].(float64) != 2 || ev["backfill_id"] != bf["id"] || ev["outcome"] != "launched" ||
		ev["actor"] != "pipeline-owner (token)" || resp.Header.Get("Location") != "/api/v1/backfills/"+bf["id"].(string) {
		t.Fatalf("first push: %v %v", body, resp.Header)
	}
	before := sensorWrites(t, env)
	code, again := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m-1", "partitions": ["ap"]}`)
	if code != 200 || again["replayed"] != true || again["backfill"].(map[string]any)["id"] != bf["id"] || again["event"].(map[string]any)["received_at"] != ev["received_at"] {
		t.Fatalf("repeat: %d %v", code, again)
	}
	if after := sensorWrites(t, env); after != before {
		t.Fatalf("a repeated message_id wrote: %s -> %s", before, after)
	}
	code, _ = apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m-2", "start": "eu", "end": "us"}`)
	if code != 201 {
		t.Fatalf("range push: %d", code)
	}
	code, evs := apiCall(t, env, tok, "GET", "/api/v1/sensors/arrivals/events?limit=1", "")
	page := evs["events"].([]any)
	if code != 200 || len(page) != 1 || page[0].(map[string]any)["message_id"] != "m-2" || evs["next_cursor"] == "" {
		t.Fatalf("events page 1: %d %v", code, evs)
	}
	code, evs = apiCall(t, env, tok, "GET", "/api/v1/sensors/arrivals/events?limit=1&cursor="+url.QueryEscape(evs["next_cursor"].(string)), "")
	page = evs["events"].([]any)
	if code != 200 || len(page) != 1 || page[0].(map[string]any)["message_id"] != "m-1" || evs["next_cursor"] != "" {
		t.Fatalf("events page 2: %d %v", code, evs)
	}
	_, s := apiCall(t, env, tok, "GET", "/api/v1/sensors/arrivals", "")
	st := s["state"].(map[string]any)
	if st["events_accepted"].(float64) != 2 || st["launches"].(float64) != 2 || s["last_event"].(map[string]any)["message_id"] != "m-2" {
		t.Fatalf("counters: %v", s)
	}
}

// TestSensorAPIPushBadInput: each bad event is refused with a status and a
// message that say what is wrong and how to fix it, and writes nothing.
func TestSensorAPIPushBadInput(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	ctx := t.Context()
	env2 := testkit.New(t, testkit.Options{WorkspaceYAML: strings.Replace(sensorWS(t), "  arrivals:\n    assets: [t.regions]\n", "  arrivals:\n    assets: [t.regions]\n    enabled: false\n", 1)})
	env2.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	env2.StartSensors(t)
	if _, err := sensors.SetPaused(ctx, "arrivals", true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := sensors.SetPaused(ctx, "arrivals", false, "alice"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, body string
		env              *testkit.Env
		status           int
		field            string
		msg              []string
	}{
		{"no message_id", "arrivals", `{"partitions": ["eu"]}`, env, 400, "message_id", []string{"message_id is required"}},
		{"blank message_id", "arrivals", `{"message_id": "  ", "partitions": ["eu"]}`, env, 400, "message_id", []string{"message_id is required"}},
		{"long message_id", "arrivals", `{"message_id": "` + strings.Repeat("x", 201) + `", "partitions": ["eu"]}`, env, 400, "message_id", []string{"at most 200"}},
		{"unknown partition", "arrivals", `{"message_id": "m", "partitions": ["eu", "mars"]}`, env, 400, "partitions[1]", []string{"mars"}},
		{"no partitions", "arrivals", `{"message_id": "m"}`, env, 400, "partitions", []string{"say which partitions"}},
		{"partitions and a range", "arrivals", `{"message_id": "m", "partitions": ["eu"], "start": "eu", "end": "us"}`, env, 400, "partitions", []string{"not both"}},
		{"foreign asset", "arrivals", `{"message_id": "m", "assets": ["t.other"], "partitions": ["x"]}`, env, 400, "assets[0]", []string{"not one of sensor arrivals's assets"}},
		// An empty list is not "all of them": a client whose filter came out
		// empty would launch a backfill of every asset of the sensor.
		{"empty assets", "arrivals", `{"message_id": "m", "assets": [], "partitions": ["eu"]}`, env, 400, "assets", []string{"assets lists no asset", "leave assets out for all of them (t.regions)"}},
		{"unknown sensor", "nope", `{"message_id": "m", "partitions": ["eu"]}`, env, 404, "", []string{`unknown sensor "nope" (the workspace declares arrivals, counter, broken)`, "GET /api/v1/sensors lists them"}},
		{"disabled", "arrivals", `{"message_id": "m", "partitions": ["eu"]}`, env2, 409, "sensor", []string{"disabled in the workspace", "enabled: true"}},
		{"malformed JSON", "arrivals", `{"message_id": "m", "partitions": ["eu"]`, env, 400, "", []string{"not valid"}},
		{"unknown field", "arrivals", `{"message_id": "m", "partition": ["eu"]}`, env, 400, "partition", []string{"partition"}},
		{"wrong type", "arrivals", `{"message_id": 7, "partitions": ["eu"]}`, env, 400, "message_id", []string{"string"}},
		{"empty body", "arrivals", ``, env, 400, "", []string{"empty"}},
	}
	for _, tc := range cases {
		before, before2 := sensorWrites(t, env), sensorWrites(t, env2)
		tk := tok
		if tc.env == env2 {
			tk = env2.Token(t, auth.RoleOperator)
		}
		code, body := apiCall(t, tc.env, tk, "POST", "/api/v1/sensors/"+tc.path+"/events", tc.body)
		if !apiRefused(t, tc.name, code, body, tc.status, tc.field, tc.msg...) {
			continue
		}
		if after, after2 := sensorWrites(t, env), sensorWrites(t, env2); after != before || after2 != before2 {
			t.Errorf("%s wrote: %s -> %s", tc.name, before+before2, after+after2)
		}
	}
	// A paused sensor: 409, the event not recorded.
	if _, err := sensors.SetPaused(ctx, "arrivals", true, "alice"); err != nil {
		t.Fatal(err)
	}
	before0 := sensorWrites(t, env)
	code, body := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m", "partitions": ["eu"]}`)
	if e, _ := body["error"].(map[string]any); code != 409 || e == nil || e["field"] != "sensor" ||
		!strings.Contains(fmt.Sprint(e["message"]), "sensor arrivals is paused") || !strings.Contains(fmt.Sprint(e["message"]), "POST /api/v1/sensors/arrivals/resume resumes it") {
		t.Errorf("paused: %d %v", code, body)
	}
	if after0 := sensorWrites(t, env); after0 != before0 {
		t.Errorf("an event to a paused sensor wrote: %s -> %s", before0, after0)
	}
	if _, err := sensors.SetPaused(ctx, "arrivals", false, "alice"); err != nil {
		t.Fatal(err)
	}
	// A poll sensor disabled in the workspace evaluates nothing (a dry run
	// still shows what it would).
	env3 := testkit.New(t, testkit.Options{WorkspaceYAML: strings.Replace(sensorWS(t), "    timeout: 10s\n", "    timeout: 10s\n    enabled: false\n", 1)})
	env3.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	env3.StartSensors(t)
	tok3 := env3.Token(t, auth.RoleOperator)
	before3 := sensorWrites(t, env3)
	if code, body := apiCall(t, env3, tok3, "POST", "/api/v1/sensors/counter/evaluate", ``); code != 409 ||
		!strings.Contains(fmt.Sprint(body["error"]), "sensor counter is disabled in the workspace; it launches nothing") || !strings.Contains(fmt.Sprint(body["error"]), "enabled: true") {
		t.Fatalf("evaluate a disabled sensor: %d %v", code, body)
	}
	if after3 := sensorWrites(t, env3); after3 != before3 {
		t.Fatalf("evaluating a disabled sensor wrote: %s -> %s", before3, after3)
	}
	if code, body := apiCall(t, env3, tok3, "POST", "/api/v1/sensors/counter/evaluate", `{"dry_run": true}`); code != 200 || len(body["requests"].([]any)) != 1 {
		t.Fatalf("dry run of a disabled sensor: %d %v", code, body)
	}
	// A viewer may not push: 403, nothing written.
	before := sensorWrites(t, env)
	if code, body := apiCall(t, env, env.Token(t, auth.RoleViewer), "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "v", "partitions": ["eu"]}`); code != 403 ||
		!strings.Contains(fmt.Sprint(body), "operator") {
		t.Fatalf("viewer push: %d %v", code, body)
	}
	if after := sensorWrites(t, env); after != before {
		t.Fatalf("a viewer's push wrote: %s -> %s", before, after)
	}
}

// TestSensorAPIEvaluate: a dry run shows the requests with a preview and
// moves nothing; an evaluation launches and moves the cursor; the
// evaluations page by id, newest first; the run keys are searched and paged.
func TestSensorAPIEvaluate(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	before := sensorWrites(t, env)
	code, dry := apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/evaluate", `{"dry_run": true}`)
	reqs := dry["requests"].([]any)
	rec := dry["evaluation"].(map[string]any)
	if code != 200 || rec["kind"] != "dry_run" || len(reqs) != 1 || reqs[0].(map[string]any)["preview"].(map[string]any)["total_partitions"].(float64) != 1 ||
		reqs[0].(map[string]any)["backfill"] != nil || rec["cursor_after"] != "1" {
		t.Fatalf("dry run: %d %v", code, dry)
	}
	if !strings.Contains(fmt.Sprint(rec["log_tail"]), "evaluated counter at 0") {
		t.Fatalf("log tail %v", rec["log_tail"])
	}
	_, s := apiCall(t, env, tok, "GET", "/api/v1/sensors/counter", "")
	if s["state"].(map[string]any)["cursor"] != nil || strings.Split(sensorWrites(t, env), "|")[3] != strings.Split(before, "|")[3] {
		t.Fatalf("a dry run moved the cursor or launched: %v", s)
	}
	for i := 1; i <= 3; i++ {
		code, ev := apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/evaluate", "")
		r := ev["requests"].([]any)[0].(map[string]any)
		if code != 200 || r["backfill"] == nil || r["run_key"] != fmt.Sprintf("k%d", i) {
			t.Fatalf("evaluation %d: %d %v", i, code, ev)
		}
	}
	_, s = apiCall(t, env, tok, "GET", "/api/v1/sensors/counter", "")
	if st := s["state"].(map[string]any); st["cursor"] != "3" || st["launches"].(float64) != 3 || st["evaluations"].(float64) != 3 || st["last_evaluated_at"] == nil {
		t.Fatalf("state after 3 evaluations: %v", st)
	}
	// Four evaluations (3 + the dry run), two a page, newest first.
	var ids []float64
	cursor := ""
	for page := 0; page < 3; page++ {
		path := "/api/v1/sensors/counter/evaluations?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, p := apiCall(t, env, tok, "GET", path, "")
		if code != 200 {
			t.Fatalf("evaluations: %d %v", code, p)
		}
		for _, e := range p["evaluations"].([]any) {
			ids = append(ids, e.(map[string]any)["id"].(float64))
		}
		if cursor = p["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if len(ids) != 4 || ids[0] < ids[1] || ids[1] < ids[2] || ids[2] < ids[3] {
		t.Fatalf("evaluation ids %v: want 4, newest first", ids)
	}
	code, keys := apiCall(t, env, tok, "GET", "/api/v1/sensors/counter/run-keys?prefix=k&limit=2", "")
	kl := keys["run_keys"].([]any)
	if code != 200 || len(kl) != 2 || kl[0].(map[string]any)["run_key"] != "k1" || keys["next_after"] != "k2" {
		t.Fatalf("run keys: %d %v", code, keys)
	}
	_, keys = apiCall(t, env, tok, "GET", "/api/v1/sensors/counter/run-keys?prefix=k&after=k2", "")
	if kl = keys["run_keys"].([]any); len(kl) != 1 || kl[0].(map[string]any)["run_key"] != "k3" || keys["next_after"] != "" {
		t.Fatalf("run keys after k2: %v", keys)
	}
	if _, keys = apiCall(t, env, tok, "GET", "/api/v1/sensors/counter/run-keys?prefix=zz", ""); len(keys["run_keys"].([]any)) != 0 {
		t.Fatalf("prefix zz: %v", keys)
	}
}

// TestSensorAPIEvaluateFailure: a failing evaluator answers 200 with the
// evaluation's error and log, shows ERROR with the message, and keeps the
// cursor.
func TestSensorAPIEvaluateFailure(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	code, ev := apiCall(t, env, tok, "POST", "/api/v1/sensors/broken/evaluate", `{}`)
	rec := ev["evaluation"].(map[string]any)
	if code != 200 || !strings.Contains(fmt.Sprint(rec["error"]), "exited with status 3") || !strings.Contains(fmt.Sprint(rec["log_tail"]), "no upstream") {
		t.Fatalf("failed evaluation: %d %v", code, ev)
	}
	_, s := apiCall(t, env, tok, "GET", "/api/v1/sensors/broken", "")
	st := s["state"].(map[string]any)
	if st["status"] != "error" || !strings.Contains(fmt.Sprint(st["last_error"]), "exited with status 3") || st["failures"].(float64) != 1 || st["cursor"] != nil || st["next_evaluation_at"] == nil {
		t.Fatalf("state after a failure: %v", st)
	}
}

// TestSensorAPIStateRefusals: evaluating a push sensor, pausing a paused
// one, resuming a running one, bad queries and bodies: each a clear 4xx,
// nothing written.
func TestSensorAPIStateRefusals(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	code, s := apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/pause", "")
	if st := s["state"].(map[string]any); code != 200 || st["paused"] != true || !strings.HasPrefix(fmt.Sprint(st["paused_by"]), "test-operator-") {
		t.Fatalf("pause: %d %v", code, s)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
		msg                      []string
	}{
		{"evaluate a push sensor", "POST", "/api/v1/sensors/arrivals/evaluate", `{"dry_run": true}`, 409, "sensor", []string{"has no evaluator", "POST /api/v1/sensors/arrivals/events"}},
		{"pause a paused sensor", "POST", "/api/v1/sensors/counter/pause", "", 409, "state", []string{"already paused", "POST /api/v1/sensors/counter/resume resumes it"}},
		{"resume a running sensor", "POST", "/api/v1/sensors/arrivals/resume", "", 409, "state", []string{"already running", "nothing to do"}},
		{"evaluate an unknown sensor", "POST", "/api/v1/sensors/nope/evaluate", "", 404, "", []string{"unknown sensor", "GET /api/v1/sensors"}},
		{"evaluate with an unknown field", "POST", "/api/v1/sensors/counter/evaluate", `{"dryrun": true}`, 400, "dryrun", []string{"dryrun"}},
		{"pause with a body", "POST", "/api/v1/sensors/arrivals/pause", `{"why": "x"}`, 400, "why", []string{"why"}},
		{"bad evaluations cursor", "GET", "/api/v1/sensors/counter/evaluations?cursor=zzz", "", 400, "cursor", []string{"cursor"}},
		{"bad events cursor", "GET", "/api/v1/sensors/arrivals/events?cursor=zzz", "", 400, "cursor", []string{"cursor"}},
		{"bad limit", "GET", "/api/v1/sensors/counter/run-keys?limit=0", "", 400, "limit", []string{"whole number from 1 to"}},
		{"long prefix", "GET", "/api/v1/sensors/counter/run-keys?prefix=" + strings.Repeat("k", 201), "", 400, "prefix", []string{"at most 200"}},
		{"unknown sensor's events", "GET", "/api/v1/sensors/nope/events", "", 404, "", []string{"unknown sensor"}},
	}
	for _, tc := range cases {
		sensorRefused(t, env, tok, tc.name, tc.method, tc.path, tc.body, tc.status, tc.field, tc.msg...)
	}
	if code, s = apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/resume", "{}"); code != 200 || s["state"].(map[string]any)["paused"] != false {
		t.Fatalf("resume: %d %v", code, s)
	}
}

// TestSensorAPICursor: admins set or clear a cursor, recorded with who did
// it; operators may not; a body without a cursor, or not a string, is a
// 400 that writes nothing.
func TestSensorAPICursor(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	admin := env.Token(t, auth.RoleAdmin)
	before := sensorWrites(t, env)
	if code, body := apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/cursor", `{"cursor": "41"}`); code != 403 {
		t.Fatalf("operator: %d %v", code, body)
	}
	for _, tc := range []struct{ body, msg string }{
		{`{}`, `cursor is required: send {"cursor": "VALUE"}`},
		{`{"cursor": 41}`, "cursor must be a string"},
		{`{"cursor": "` + strings.Repeat("c", 64<<10+1) + `"}`, "at most 65536"},
		{`{"cursor": "1", "x": 1}`, "x"},
	} {
		code, body := apiCall(t, env, admin, "POST", "/api/v1/sensors/counter/cursor", tc.body)
		if code != 400 || !strings.Contains(fmt.Sprint(body["error"]), tc.msg) {
			t.Errorf("%.40s: %d %v; want 400 with %q", tc.body, code, body, tc.msg)
		}
	}
	if after := sensorWrites(t, env); after != before {
		t.Fatalf("refused cursor requests wrote: %s -> %s", before, after)
	}
	code, s := apiCall(t, env, admin, "POST", "/api/v1/sensors/counter/cursor", `{"cursor": "41"}`)
	if code != 200 || s["state"].(map[string]any)["cursor"] != "41" {
		t.Fatalf("set: %d %v", code, s)
	}
	_, ev := apiCall(t, env, tok, "POST", "/api/v1/sensors/counter/evaluate", "")
	if r := ev["requests"].([]any)[0].(map[string]any); r["run_key"] != "k42" {
		t.Fatalf("the evaluation after the reset did not start from 41: %v", ev)
	}
	code, s = apiCall(t, env, admin, "POST", "/api/v1/sensors/counter/cursor", `{"cursor": null}`)
	if code != 200 || s["state"].(map[string]any)["cursor"] != nil {
		t.Fatalf("clear: %d %v", code, s)
	}
	_, evs := apiCall(t, env, tok, "GET", "/api/v1/sensors/counter/evaluations", "")
	list := evs["evaluations"].([]any)
	last := list[0].(map[string]any)
	if len(list) != 3 || last["kind"] != "reset" || last["cursor_before"] != "42" || last["cursor_after"] != nil || !strings.HasPrefix(last["actor"].(string), "test-admin-") {
		t.Fatalf("reset records: %v", list)
	}
}

// TestSensorAPIEventsToPollSensor (issue 22 audit): a poll sensor takes no
// pushed events — its page lists evaluations, not events, so a backfill an
// event launched there was seen nowhere. The push is a 409 that says to
// evaluate it instead, and writes nothing.
func TestSensorAPIEventsToPollSensor(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	sensorRefused(t, env, tok, "event to a poll sensor", "POST", "/api/v1/sensors/counter/events", `{"message_id": "m1", "partitions": ["eu"]}`,
		http.StatusConflict, "", "polls its evaluator", "/api/v1/sensors/counter/evaluate")
}

// TestSensorAPICursorOfPushSensor (issue 22 audit): a push sensor has no
// evaluator to read a cursor; setting one is a 409 that writes nothing
// (it used to store the cursor and record a reset).
func TestSensorAPICursorOfPushSensor(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	admin := env.Token(t, auth.RoleAdmin)
	sensorRefused(t, env, admin, "cursor of a push sensor", "POST", "/api/v1/sensors/arrivals/cursor", `{"cursor": "41"}`, http.StatusConflict, "", "has no evaluator")
}

// TestSensorAPIEvaluateAnswersItsID (issue 22 audit): evaluate now and a
// dry run answer the evaluation as recorded, with its id (it was 0, so
// the CLI printed "evaluation 0"), the id the evaluations list shows.
func TestSensorAPIEvaluateAnswersItsID(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	for _, c := range []struct{ sensor, body string }{{"counter", ""}, {"counter", `{"dry_run": true}`}, {"broken", ""}} {
		code, ev := apiCall(t, env, tok, "POST", "/api/v1/sensors/"+c.sensor+"/evaluate", c.body)
		_, list := apiCall(t, env, tok, "GET", "/api/v1/sensors/"+c.sensor+"/evaluations?limit=1", "")
		got := ev["evaluation"].(map[string]any)["id"]
		want := list["evaluations"].([]any)[0].(map[string]any)["id"]
		if code != 200 || got != want || got.(float64) <= 0 {
			t.Errorf("%s %s: answered evaluation id %v, the list's newest is %v", c.sensor, c.body, got, want)
		}
	}
}
