package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// sensorPost posts a sensor page's form as c and follows its redirect
// back to the page (or reads the page answered in its place).
func sensorPost(t *testing.T, env *testkit.Env, c *http.Client, path string, form url.Values) (int, *goquery.Document) {
	t.Helper()
	resp := env.SessionPost(t, c, path, form)
	if resp.StatusCode == http.StatusSeeOther {
		return pgGet(t, env, c, resp.Header.Get("Location"))
	}
	return resp.StatusCode, pgDoc(t, resp)
}

// TestSensorsPage: every sensor with its kind, its state (OK, ERROR with
// the error, PAUSED), its last event or evaluation and its counts.
func TestSensorsPage(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	if code, _ := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "m-1", "partitions": ["eu"]}`); code != 201 {
		t.Fatal(code)
	}
	if code, _ := apiCall(t, env, tok, "POST", "/api/v1/sensors/broken/evaluate", ``); code != 200 {
		t.Fatal(code)
	}
	if _, err := sensors.SetPaused(t.Context(), "counter", true, "alice"); err != nil {
		t.Fatal(err)
	}
	status, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/sensors")
	if status != 200 || doc.Find(`[data-testid="nav-sensors"][aria-current="page"]`).Length() != 1 {
		t.Fatalf("status %d, or no current nav link", status)
	}
	rows := doc.Find(`[data-testid="sensor-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d rows", rows.Length())
	}
	row := func(name string) *goquery.Selection {
		return doc.Find(`[data-testid="sensor-row"][data-name="` + name + `"]`)
	}
	if r := row("arrivals"); r.AttrOr("data-kind", "") != "push" || r.AttrOr("data-state", "") != "OK" ||
		text(r.Find(`[data-testid="sensor-last"]`)) == "" || !strings.HasPrefix(text(r.Find(`[data-testid="sensor-last"]`)), "event m-1: launched") ||
		text(r.Find(`[data-testid="sensor-counts"]`)) != "1 event, 1 backfill" {
		t.Errorf("arrivals row: %q", text(r))
	}
	if r := row("broken"); r.AttrOr("data-state", "") != "ERROR" || !strings.Contains(text(r.Find(`[data-testid="sensor-error"]`)), "exited with status 3") ||
		!strings.HasPrefix(text(r.Find(`[data-testid="sensor-last"]`)), "evaluation failed") || !strings.Contains(text(r), "command every 1h (timeout 1m)") {
		t.Errorf("broken row: %q", text(r))
	}
	if r := row("counter"); r.AttrOr("data-state", "") != "PAUSED" || r.Find(`a[data-testid="sensor-link"]`).AttrOr("href", "") != "/sensors/counter" {
		t.Errorf("counter row: %q", text(r))
	}
}

// TestSensorPageButtonsPerRole: viewers see no button; operators pause or
// resume, and evaluate and dry-run a poll sensor; admins also reset its
// cursor. Every form carries the CSRF token.
func TestSensorPageButtonsPerRole(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	for _, tc := range []struct {
		role   auth.Role
		sensor string
		want   string
		reset  bool
	}{
		{auth.RoleViewer, "counter", "", false},
		{auth.RoleOperator, "counter", "pause,evaluate,dry-run", false},
		{auth.RoleOperator, "arrivals", "pause", false},
		{auth.RoleAdmin, "counter", "pause,evaluate,dry-run", true},
		{auth.RoleAdmin, "arrivals", "pause", false},
	} {
		status, doc := pgGet(t, env, env.Client(t, tc.role), "/sensors/"+tc.sensor)
		var got []string
		doc.Find(`[data-testid="sensor-actions"] button`).Each(func(_ int, b *goquery.Selection) {
			got = append(got, strings.TrimPrefix(b.AttrOr("data-testid", ""), "action-"))
		})
		if status != 200 || strings.Join(got, ",") != tc.want || (doc.Find(`[data-testid="cursor-reset"]`).Length() == 1) != tc.reset {
			t.Errorf("%s on %s: %d buttons %v, reset form %v", tc.role, tc.sensor, status, got, doc.Find(`[data-testid="cursor-reset"]`).Length())
		}
		doc.Find("form[method=post]").Each(func(_ int, f *goquery.Selection) {
			if f.Find(`input[name="_csrf"]`).AttrOr("value", "") == "" {
				t.Errorf("%s on %s: a form without a CSRF token: %s", tc.role, tc.sensor, f.AttrOr("action", ""))
			}
		})
	}
}

// TestSensorPageDryRunAndEvaluate: Dry run shows what the evaluator would
// request (with what it would build) and launches nothing; Evaluate now
// launches, links the backfill and records the run key, which the search
// box finds.
func TestSensorPageDryRunAndEvaluate(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	op := env.Client(t, auth.RoleOperator)
	status, doc := sensorPost(t, env, op, "/sensors/counter/dry-run", nil)
	first := doc.Find(`[data-testid="evaluation-row"]`).First()
	if status != 200 || !strings.Contains(text(doc.Find(`[data-testid="notice"]`)), "Dry run: the evaluator would request 1 backfill") ||
		first.AttrOr("data-kind", "") != "dry_run" || text(first.Find(`[data-testid="request-preview"]`)) != "would build 1 partition in 1 chunk" ||
		first.Find(`[data-testid="request-backfill"]`).Length() != 0 || !strings.Contains(text(first), "run key k1") {
		t.Fatalf("dry run: %d %q", status, text(doc.Find("main")))
	}
	if text(doc.Find(`[data-testid="cursor"]`)) != "none" || strings.Split(sensorWrites(t, env), "|")[3] != "0" {
		t.Fatalf("a dry run moved the cursor (%q) or launched", text(doc.Find(`[data-testid="cursor"]`)))
	}
	if !strings.Contains(first.Find(`[data-testid="evaluation-log"]`).Text(), "evaluated counter at 0") {
		t.Fatalf("log tail: %q", first.Find(`[data-testid="evaluation-log"]`).Text())
	}
	status, doc = sensorPost(t, env, op, "/sensors/counter/evaluate", nil)
	link := doc.Find(`[data-testid="notice-link"]`)
	first = doc.Find(`[data-testid="evaluation-row"]`).First()
	if status != 200 || !strings.HasPrefix(link.AttrOr("href", ""), "/backfills/") || first.Find(`[data-testid="request-backfill"]`).AttrOr("href", "") != link.AttrOr("href", "") ||
		text(doc.Find(`[data-testid="cursor"]`)) != "1" {
		t.Fatalf("evaluate: %d %q", status, text(doc.Find("main")))
	}
	if keys := doc.Find(`[data-testid="run-key-row"]`); keys.Length() != 1 || keys.AttrOr("data-key", "") != "k1" {
		t.Fatalf("run keys: %q", text(doc.Find(`[data-testid="run-keys-table"]`)))
	}
	_, doc = pgGet(t, env, op, "/sensors/counter?prefix=zz")
	if doc.Find(`[data-testid="run-key-row"]`).Length() != 0 || text(doc.Find(`[data-testid="run-keys-empty"]`)) != "No run key starting with zz yet." {
		t.Fatalf("search zz: %q", text(doc.Find(`[data-testid="run-key-search"]`).Parent()))
	}
	// The backfill says who launched it and links back.
	_, bf := pgGet(t, env, op, link.AttrOr("href", ""))
	if a := bf.Find(`[data-testid="launched-by"] [data-testid="created-by-sensor"]`); a.AttrOr("href", "") != "/sensors/counter" || text(a) != "counter" {
		t.Fatalf("backfill page: %q", text(bf.Find(`[data-testid="launched-by"]`)))
	}
}

// TestSensorPageRefusals: an action that does not apply shows the page
// again (409) with why and what to do; no CSRF token, the wrong role or an
// unknown action change nothing.
func TestSensorPageRefusals(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	op, admin := env.Client(t, auth.RoleOperator), env.Client(t, auth.RoleAdmin)
	if status, doc := sensorPost(t, env, op, "/sensors/counter/pause", nil); status != 200 || doc.Find(`[data-testid="sensor-state"]`).AttrOr("data-state", "") != "PAUSED" ||
		!strings.HasPrefix(text(doc.Find(`[data-testid="paused-by"]`)), "Paused by test-operator-") {
		t.Fatalf("pause: %d %q", status, text(doc.Find("main")))
	}
	for _, tc := range []struct {
		client *http.Client
		path   string
		status int
		msg    string
	}{
		{op, "/sensors/counter/pause", 409, "Not done: sensor counter is already paused; use Resume to resume it."},
		{op, "/sensors/arrivals/dry-run", 409, "Not done: sensor arrivals has no evaluator: it is pushed events, it does not poll; it launches backfills when events are pushed to it."},
		{op, "/sensors/arrivals/resume", 409, "Not done: sensor arrivals is already running; nothing to do."},
		{op, "/sensors/counter/launch", 404, ""},
		{op, "/sensors/nope/pause", 404, ""},
		{op, "/sensors/counter/cursor", 403, ""},
	} {
		before := sensorWrites(t, env)
		status, doc := sensorPost(t, env, tc.client, tc.path, nil)
		if status != tc.status || (tc.msg != "" && text(doc.Find(`[data-testid="message"]`)) != tc.msg+" The page has been reloaded.") {
			t.Errorf("%s: %d %q; want %d %q", tc.path, status, text(doc.Find(`[data-testid="message"]`)), tc.status, tc.msg)
		}
		if after := sensorWrites(t, env); after != before {
			t.Errorf("%s wrote: %s -> %s", tc.path, before, after)
		}
	}
	// Without the CSRF token: refused, nothing changes.
	before := sensorWrites(t, env)
	resp, err := op.Post(env.URL+"/sensors/counter/resume", "application/x-www-form-urlencoded", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || sensorWrites(t, env) != before {
		t.Fatalf("no CSRF token: %d", resp.StatusCode)
	}
	// Admins set and clear the cursor; each reset is recorded.
	status, doc := sensorPost(t, env, admin, "/sensors/counter/cursor", url.Values{"cursor": {"7"}, "set": {"1"}})
	if status != 200 || text(doc.Find(`[data-testid="cursor"]`)) != "7" || !strings.Contains(text(doc.Find(`[data-testid="notice"]`)), `Cursor set to "7"`) {
		t.Fatalf("set cursor: %d %q", status, text(doc.Find("main")))
	}
	status, doc = sensorPost(t, env, admin, "/sensors/counter/cursor", url.Values{"cursor": {"7"}, "clear": {"1"}})
	first := doc.Find(`[data-testid="evaluation-row"]`).First()
	if status != 200 || text(doc.Find(`[data-testid="cursor"]`)) != "none" || first.AttrOr("data-kind", "") != "reset" || !strings.Contains(text(first), "7 → none") {
		t.Fatalf("clear cursor: %d %q", status, text(doc.Find("main")))
	}
}

// TestSensorsPageUsedRunKeySummary (issue 22 audit): an evaluation whose
// only request had a used run key launched nothing, but it did request
// something: the Sensors page says so ("1 request, none launched (run key
// used)"), not "nothing requested".
func TestSensorsPageUsedRunKeySummary(t *testing.T) {
	t.Parallel()
	env, sensors, _ := sensorEnv(t)
	ctx := t.Context()
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

// TestSensorPrunedHistoryShown: a pushed event and a poll sensor's
// evaluation pruned after the retention: the sensor pages and the API say
// how many (retention 90 days by default), and the same message id pushed
// again still answers 200, replayed, with its first backfill, marked
// pruned, and launches nothing.
func TestSensorPrunedHistoryShown(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	ctx := t.Context()
	code, first := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "crm-1", "partitions": ["eu"]}`)
	if code != http.StatusCreated {
		t.Fatalf("push: %d %v", code, first)
	}
	bf := first["event"].(map[string]any)["backfill_id"]
	if _, err := sensors.Evaluate(ctx, "counter", false, "alice"); err != nil {
		t.Fatal(err)
	}
	p, err := sensors.Prune(ctx, time.Now().Add(jobs.DefaultAutomationRetention+time.Hour))
	if err != nil || p.Events != 1 || p.Evaluations != 1 {
		t.Fatalf("pruned %+v, %v", p, err)
	}
	code, again := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", `{"message_id": "crm-1", "partitions": ["us"]}`)
	ev, _ := again["event"].(map[string]any)
	if code != http.StatusOK || again["replayed"] != true || ev["backfill_id"] != bf || ev["pruned"] != true {
		t.Fatalf("the pruned message id again: %d %v", code, again)
	}
	if bs, _ := env.Store.Backfills(ctx, nil, "", 0, 100); len(bs) != 2 {
		t.Fatalf("%d backfills, want the event's and the evaluation's", len(bs))
	}
	viewer := env.Client(t, auth.RoleViewer)
	for path, want := range map[string]string{
		"/sensors/arrivals": "1 older event pruned (retention 90 days). A pruned event's message id still answers as a duplicate",
		"/sensors/counter":  "1 older evaluation pruned (retention 90 days)",
		"/sensors/broken":   "no evaluations pruned yet (retention 90 days)",
	} {
		if code, doc := pgGet(t, env, viewer, path); code != 200 || text(doc.Find(`[data-testid="pruned"]`)) != want {
			t.Errorf("%s: %d %q, want %q", path, code, text(doc.Find(`[data-testid="pruned"]`)), want)
		}
	}
	for name, want := range map[string][2]float64{"arrivals": {0, 1}, "counter": {1, 0}} {
		code, body := apiCall(t, env, tok, "GET", "/api/v1/sensors/"+name, "")
		st, _ := body["state"].(map[string]any)
		if code != 200 || body["retention"] != "90d" || st["pruned_evaluations"] != want[0] || st["pruned_events"] != want[1] {
			t.Errorf("get %s: %d %v", name, code, body)
		}
	}
	code, body := apiCall(t, env, tok, "GET", "/api/v1/sensors", "")
	if list, _ := body["sensors"].([]any); code != 200 || len(list) != 3 || list[0].(map[string]any)["retention"] != "90d" {
		t.Fatalf("list: %d %v", code, body)
	}
}

// TestSensorPageListPages: a poll sensor's evaluations and a push sensor's
// events come handlers.SensorPageSize a page, newest first; the first page
// links the next one under the list's heading, the next one links back to
// the newest and, being the last, no further.
func TestSensorPageListPages(t *testing.T) {
	t.Parallel()
	env, _, _ := sensorEnv(t)
	ctx := t.Context()
	for i := range handlers.SensorPageSize + 5 {
		at := int64(1_000_000 + i)
		if _, err := env.Store.RecordDryRun(ctx, db.SensorEvaluation{Sensor: "counter", Kind: db.EvalDryRun, StartedAt: at, Requests: "[]", Actor: "t"}); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.Tx(ctx, func(tx *db.Tx) error {
			_, _, err := db.RecordSensorEventTx(ctx, tx, db.SensorEvent{Sensor: "arrivals", MessageID: fmt.Sprintf("m%02d", i), ReceivedAt: at, Outcome: db.EventSkipped, Actor: "t"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	c := env.Client(t, auth.RoleViewer)
	for _, l := range []struct{ sensor, list string }{{"counter", "evaluations"}, {"arrivals", "events"}} {
		href := "/sensors/" + l.sensor
		link := func(doc *goquery.Document, which string) *goquery.Selection {
			return doc.Find(`[data-testid="` + l.list + `-` + which + `"]`)
		}
		_, doc := pgGet(t, env, c, href)
		next := link(doc, "next").AttrOr("href", "")
		if link(doc, "first").Length() != 0 || !strings.HasPrefix(next, href+"?"+l.list+"=") || !strings.HasSuffix(next, "#"+l.list) {
			t.Fatalf("%s, first page: next %q, %d links to the newest", l.list, next, link(doc, "first").Length())
		}
		_, doc = pgGet(t, env, c, next)
		if first := link(doc, "first").AttrOr("href", ""); first != href+"#"+l.list || link(doc, "next").Length() != 0 {
			t.Errorf("%s, second page: newest %q, %d links further", l.list, first, link(doc, "next").Length())
		}
	}
}
