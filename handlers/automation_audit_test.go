package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
)

// TestScheduleAPIActionBodies (issue 22 audit): pause, resume and run now
// take no body; one that is not JSON, or has a field, is a 400 that says
// so and writes nothing — run now with a stray body used to launch a
// backfill anyway, unlike the sensors' pause and resume.
func TestScheduleAPIActionBodies(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	for _, c := range []struct{ path, body, want string }{
		{"/api/v1/schedules/regions/trigger", `xx`, "malformed JSON"},
		{"/api/v1/schedules/regions/trigger", `{"now": true}`, `unknown field "now"`},
		{"/api/v1/schedules/regions/pause", `{"why": "maintenance"}`, `unknown field "why"`},
		{"/api/v1/schedules/regions/resume", `[1]`, "JSON"},
	} {
		before := scheduleWrites(t, env)
		code, body := apiCall(t, env, tok, "POST", c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), c.want) {
			t.Errorf("%s %s: %d %v; want 400 saying %q", c.path, c.body, code, body, c.want)
		}
		if after := scheduleWrites(t, env); after != before {
			t.Errorf("%s %s wrote", c.path, c.body)
		}
	}
	// An empty body, or an empty object, still runs it.
	for _, body := range []string{"", "{}"} {
		if code, r := apiCall(t, env, tok, "POST", "/api/v1/schedules/regions/trigger", body); code != http.StatusCreated {
			t.Fatalf("run now with body %q: %d %v", body, code, r)
		}
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

// TestAutomationPageListsSensors (issue 22 audit): the Automation page
// shows every sensor too (the issue: "every schedule and sensor: state,
// next tick or last evaluation, a strip of recent outcomes"), not only the
// schedules: its state with the last error, its last evaluation or event,
// and a strip of the outcomes of its newest ones, oldest first.
func TestAutomationPageListsSensors(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	ctx := context.Background()
	if code, r := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m1", "partitions": ["eu"]}`); code != 201 {
		t.Fatalf("push: %d %v", code, r)
	}
	for _, dry := range []bool{false, false, true} {
		if _, err := sensors.Evaluate(ctx, "counter", dry, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sensors.Evaluate(ctx, "broken", false, "alice"); err != nil {
		t.Fatal(err)
	}
	code, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/automation")
	rows := doc.Find(`[data-testid="sensor-row"]`)
	if code != 200 || rows.Length() != 3 {
		t.Fatalf("automation: %d, %d sensor rows, want 3", code, rows.Length())
	}
	strip := func(r *goquery.Selection) string {
		var out []string
		r.Find(`[data-testid="tick-strip"] rect`).Each(func(_ int, c *goquery.Selection) { out = append(out, c.AttrOr("data-outcome", "")) })
		return strings.Join(out, ",")
	}
	for i, want := range []struct{ name, state, strip, last string }{
		{"arrivals", "OK", "launched", "event m1: launched"},
		{"counter", "OK", "launched,launched,skipped", "dry run"},
		{"broken", "ERROR", "failed", "evaluation failed"},
	} {
		r := rows.Eq(i)
		if r.AttrOr("data-name", "") != want.name || r.AttrOr("data-state", "") != want.state || strip(r) != want.strip ||
			!strings.HasPrefix(text(r.Find(`[data-testid="sensor-last"]`)), want.last) || r.Find(`[data-testid="sensor-link"]`).AttrOr("href", "") != "/sensors/"+want.name {
			t.Errorf("row %d: %s %s strip %q last %q; want %+v", i, r.AttrOr("data-name", ""), r.AttrOr("data-state", ""), strip(r), text(r.Find(`[data-testid="sensor-last"]`)), want)
		}
	}
	if got := text(rows.Eq(2).Find(`[data-testid="sensor-error"]`)); !strings.Contains(got, "exited with status 3") {
		t.Errorf("broken's error %q", got)
	}
}

// TestSchedulePageWording (issue 22 audit): the schedule page reads as
// written: "1 partition in 1 chunk" (it said "1 partitions in 1 chunks")
// and a catch-up window as the workspace writes it, "1d" (it said
// "24 h 0 min").
func TestSchedulePageWording(t *testing.T) {
	t.Parallel()
	env, _, _ := schedEnv(t)
	code, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/schedules/hourly")
	preview, defn := text(doc.Find(`[data-testid="tick-preview"]`)), text(doc.Find(`main dl`))
	if code != 200 || !strings.Contains(preview, "would launch a backfill of 1 partition in 1 chunk:") || !strings.Contains(defn, "ticks missed within 1d, at most 1") {
		t.Fatalf("%d\npreview: %s\ndefinition: %s", code, preview, defn)
	}
}

// TestSensorsPageUsedRunKeySummary (issue 22 audit): an evaluation whose
// only request had a used run key launched nothing, but it did request
// something: the Sensors page says so ("1 request, none launched (run key
// used)"), not "nothing requested".
func TestSensorsPageUsedRunKeySummary(t *testing.T) {
	t.Parallel()
	env, sensors, _ := sensorEnv(t)
	ctx := context.Background()
	if _, err := sensors.Evaluate(ctx, "counter", false, "alice"); err != nil {
		t.Fatal(err)
	}
	// Back to cursor 0: the next evaluation asks for run key k1 again.
	if _, err := sensors.ResetCursor(ctx, "counter", nil, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := sensors.Evaluate(ctx, "counter", false, "alice"); err != nil {
		t.Fatal(err)
	}
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/sensors")
	if got := text(doc.Find(`[data-testid="sensor-row"][data-name="counter"] [data-testid="sensor-last"]`)); !strings.HasPrefix(got, "evaluation: 1 request, none launched (run key used)") {
		t.Fatalf("last evaluation: %q", got)
	}
}
