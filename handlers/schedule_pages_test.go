package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestAutomationPage: every schedule with its state, cron and zone, next
// tick, last outcome and a strip of its recent outcomes.
func TestAutomationPage(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	ctx := t.Context()
	evaluateSince(t, sched, 6*time.Hour) // 5 missed, 1 launched
	if _, err := sched.SetPaused(ctx, "regions", true, "alice"); err != nil {
		t.Fatal(err)
	}
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/automation")
	if code != 200 || doc.Find(`[data-testid="nav-automation"][aria-current="page"]`).Length() != 1 {
		t.Fatalf("automation: %d, nav %q", code, doc.Find(`nav`).Text())
	}
	rows := doc.Find(`[data-testid="schedule-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d rows", rows.Length())
	}
	h := rows.Eq(0)
	if h.AttrOr("data-name", "") != "hourly" || h.AttrOr("data-state", "") != "running" || text(h.Find(`[data-testid="schedule-tz"]`)) != "Europe/Berlin" ||
		!strings.Contains(text(h.Find(`[data-testid="next-tick"]`)), "UTC)") ||
		h.Find(`[data-testid="last-tick"] [data-testid="tick-outcome"]`).AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("hourly row: %s", text(h))
	}
	cells := h.Find(`[data-testid="tick-strip"] rect`)
	if cells.Length() != 6 || cells.First().AttrOr("data-outcome", "") != "skipped" || cells.Last().AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("strip: %d cells, oldest first", cells.Length())
	}
	if h.Find(`[data-testid="schedule-link"]`).AttrOr("href", "") != "/schedules/hourly" {
		t.Fatal("link to the schedule page")
	}
	if r := rows.Eq(1); r.AttrOr("data-state", "") != "paused" || r.Find(`[data-testid="tick-strip"] rect`).Length() != 1 {
		t.Fatalf("regions row: %s", text(r))
	}
	if r := rows.Eq(2); r.AttrOr("data-state", "") != "disabled" || text(r.Find(`[data-testid="next-tick"]`)) != "none" {
		t.Fatalf("off row: %s", text(r))
	}
}

// TestSchedulePage: definition, next 5 ticks in its zone and UTC, the
// preview of the next tick's backfill, tick history with each launched
// tick's backfill, paged and filtered by outcome; no buttons for viewers.
func TestSchedulePage(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	evaluateSince(t, sched, 30*time.Hour) // within the day: 1 launched, the 29 older missed
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/schedules/hourly")
	if code != 200 {
		t.Fatalf("%d %s", code, text(doc.Selection))
	}
	if text(doc.Find(`[data-testid="def-Cron"]`)) != "5 * * * *" || text(doc.Find(`[data-testid="def-Time zone"]`)) != "Europe/Berlin" ||
		text(doc.Find(`[data-testid="counters"]`)) != "1 launched, 29 skipped, 0 failed" {
		t.Fatalf("definition: %s", text(doc.Find(`[data-testid="definition"]`)))
	}
	next := doc.Find(`[data-testid="next-tick-row"]`)
	if next.Length() != 5 || !strings.Contains(text(next.First()), "UTC") || !strings.Contains(text(next.First()), ":05 CE") {
		t.Fatalf("next ticks: %s", text(doc.Find(`[data-testid="next-ticks"]`)))
	}
	if text(doc.Find(`[data-testid="preview-partitions"]`)) != "1" || !strings.Contains(text(doc.Find(`[data-testid="preview-selection"]`)), "range") {
		t.Fatalf("preview: %s", text(doc.Find(`[data-testid="tick-preview"]`)))
	}
	if doc.Find(`[data-testid="schedule-actions"]`).Length() != 0 {
		t.Fatal("a viewer sees the buttons")
	}
	ticks := doc.Find(`[data-testid="tick-row"]`)
	if ticks.Length() != 25 || ticks.First().AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("first page: %d ticks", ticks.Length())
	}
	link := ticks.First().Find(`[data-testid="tick-backfill"]`).AttrOr("href", "")
	if !strings.HasPrefix(link, "/backfills/") {
		t.Fatalf("a launched tick links to its backfill: %q", link)
	}
	older, ok := doc.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatal("no older page")
	}
	_, doc2 := pgGet(t, env, viewer, older)
	if n := doc2.Find(`[data-testid="tick-row"]`).Length(); n != 5 || doc2.Find(`[data-testid="next-page"]`).Length() != 0 || doc2.Find(`[data-testid="first-page"]`).Length() != 1 {
		t.Fatalf("second page: %d ticks", n)
	}
	_, doc3 := pgGet(t, env, viewer, "/schedules/hourly?outcome=launched")
	if n := doc3.Find(`[data-testid="tick-row"]`).Length(); n != 1 || doc3.Find(`option[value="launched"][selected]`).Length() != 1 {
		t.Fatalf("launched only: %d", n)
	}
	// The launched backfill says it came from the schedule, on its page
	// and in the list, with a link back.
	_, bf := pgGet(t, env, viewer, link)
	if a := bf.Find(`[data-testid="launched-by"] [data-testid="created-by-schedule"]`); a.AttrOr("href", "") != "/schedules/hourly" || text(a) != "hourly" {
		t.Fatalf("backfill page: %s", text(bf.Find(`[data-testid="launched-by"]`)))
	}
	_, list := pgGet(t, env, viewer, "/backfills")
	if a := list.Find(`[data-testid="backfill-row"] [data-testid="created-by-schedule"][href="/schedules/hourly"]`); a.Length() != 1 || text(a) != "hourly" {
		t.Fatalf("backfills list: %s", text(list.Find(`[data-testid="backfills-table"]`)))
	}
}

// TestSchedulePageBadInput: an unknown schedule is a 404 page naming the
// declared ones, an unknown outcome filter a 400 that says which to use.
func TestSchedulePageBadInput(t *testing.T) {
	t.Parallel()
	env, _, _ := schedEnv(t)
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/schedules/nope")
	if msg := text(doc.Find(`[data-testid="error-message"]`)); code != 404 || msg != `unknown schedule "nope" (the workspace declares hourly, regions, off); the Automation page lists them` ||
		doc.Find(`[data-testid="error-back"]`).AttrOr("href", "") != "/automation" {
		t.Fatalf("%d %q, back to %q", code, msg, doc.Find(`[data-testid="error-back"]`).AttrOr("href", ""))
	}
	code, doc = pgGet(t, env, viewer, "/schedules/hourly?outcome=boom")
	if msg := text(doc.Find(`[data-testid="error-message"]`)); code != 400 || !strings.Contains(msg, `unknown outcome "boom"`) {
		t.Fatalf("%d %q", code, msg)
	}
}

// TestScheduleButtons: an operator pauses (then the page offers Resume),
// pausing again is refused with the page reloaded (409), Run now launches
// a backfill the page links to; a form without the CSRF token is refused
// and changes nothing.
func TestScheduleButtons(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	op := env.Client(t, auth.RoleOperator)
	_, doc := pgGet(t, env, op, "/schedules/regions")
	if doc.Find(`[data-testid="action-pause"]`).Length() != 1 || doc.Find(`[data-testid="action-trigger"]`).Length() != 1 ||
		doc.Find(`[data-testid="schedule-actions"] input[name="_csrf"]`).AttrOr("value", "") == "" {
		t.Fatalf("buttons: %s", text(doc.Find(`[data-testid="schedule-actions"]`)))
	}
	// No CSRF token: refused, nothing written.
	before := scheduleWrites(t, env)
	resp, err := op.PostForm(env.URL+"/schedules/regions/pause", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || scheduleWrites(t, env) != before {
		t.Fatalf("pause without CSRF: %d", resp.StatusCode)
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/pause", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/schedules/regions" {
		t.Fatalf("pause: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, doc = pgGet(t, env, op, "/schedules/regions")
	if doc.Find(`[data-testid="schedule-state"]`).AttrOr("data-state", "") != "paused" || doc.Find(`[data-testid="action-resume"]`).Length() != 1 ||
		!strings.Contains(text(doc.Find(`[data-testid="notice"]`)), "Schedule paused") || !strings.HasPrefix(text(doc.Find(`[data-testid="paused-by"]`)), "Paused by test-operator") {
		t.Fatalf("after pause: %s", text(doc.Find("main")))
	}
	before = scheduleWrites(t, env)
	resp = env.SessionPost(t, op, "/schedules/regions/pause", nil)
	page, _ := goquery.NewDocumentFromReader(resp.Body)
	if msg := text(page.Find(`[data-testid="message"]`)); resp.StatusCode != http.StatusConflict || msg != "Not done: schedule regions is already paused; use Resume to resume it. The page has been reloaded." {
		t.Fatalf("pause again: %d %q", resp.StatusCode, msg)
	}
	if scheduleWrites(t, env) != before {
		t.Fatal("a refused pause wrote")
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/trigger", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("run now: %d", resp.StatusCode)
	}
	_, doc = pgGet(t, env, op, "/schedules/regions")
	link := doc.Find(`[data-testid="notice-link"]`).AttrOr("href", "")
	row := doc.Find(`[data-testid="tick-row"]`).First()
	if !strings.HasPrefix(link, "/backfills/") || row.Find(`[data-testid="tick-backfill"]`).AttrOr("href", "") != link || row.Find(`[data-testid="tick-manual"]`).Length() != 1 {
		t.Fatalf("after run now: notice %q, tick %s", link, text(row))
	}
	apiWaitState(t, env, tok, strings.TrimPrefix(link, "/backfills/"), "SUCCEEDED")
	if code, _ := pgGet(t, env, op, "/schedules/regions/explode"); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
		t.Fatalf("GET of an action: %d", code)
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/explode", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown action: %d", resp.StatusCode)
	}
}

// manyAutomationWS declares n schedules and n push and n poll sensors.
func manyAutomationWS(n int) string {
	var b strings.Builder
	b.WriteString("assets:\n  t.regions:\n    partitions: {static: [eu, us]}\n    executor: {demo: {duration: 1ms}}\nschedules:\n")
	for i := range n {
		fmt.Fprintf(&b, "  s%03d:\n    cron: \"0 3 * * *\"\n    assets: [t.regions]\n", i)
	}
	b.WriteString("sensors:\n")
	for i := range n {
		fmt.Fprintf(&b, "  push%03d:\n    assets: [t.regions]\n  poll%03d:\n    assets: [t.regions]\n    evaluator: {command: [\"true\"]}\n    interval: 1h\n", i, i)
	}
	return b.String()
}

// automationHistory records for every schedule i of n ticks i%4 ticks
// (the newest launched, the older skipped), and for every sensor i%3
// events or dry runs, straight in the store.
func automationHistory(t *testing.T, store *db.Store, n int, t0 time.Time) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		if _, err := store.EnsureScheduleState(ctx, name, db.Millis(t0)); err != nil {
			t.Fatal(err)
		}
		for k := range i % 4 {
			at := t0.Add(time.Duration(k) * 24 * time.Hour)
			outcome := db.TickSkipped
			if k == i%4-1 {
				outcome = db.TickLaunched
			}
			if _, err := store.RecordTick(ctx, db.Tick{ID: fmt.Sprintf("%s:%d", name, at.Unix()), Schedule: name, ScheduledFor: db.Millis(at),
				EvaluatedAt: db.Millis(at), Outcome: outcome, DefinitionHash: "h", Actor: "scheduler"}); err != nil {
				t.Fatal(err)
			}
		}
		for k := range i % 3 {
			at := db.Millis(t0.Add(time.Duration(k) * time.Hour))
			if _, err := store.RecordDryRun(ctx, db.SensorEvaluation{Sensor: fmt.Sprintf("poll%03d", i), Kind: db.EvalDryRun, StartedAt: at, Requests: "[]", Actor: "t"}); err != nil {
				t.Fatal(err)
			}
			bf := "bf_x"
			if err := store.Tx(ctx, func(tx *db.Tx) error {
				_, _, err := db.RecordSensorEventTx(ctx, tx, db.SensorEvent{Sensor: fmt.Sprintf("push%03d", i), MessageID: fmt.Sprintf("m%d", k), ReceivedAt: at,
					Outcome: db.EventLaunched, BackfillID: &bf, Actor: "etl"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// countedGet serves GET path through the server's handler (every
// middleware, as an admin's bearer request) and answers its status, body
// and how many statements the reader pool ran for it.
func countedGet(t *testing.T, env *testkit.Env, tok, path string) (int, string, int64) {
	t.Helper()
	ctx, reads := db.CountReads(t.Context())
	req := httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	env.Echo.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String(), reads.N()
}

// TestAutomationPageQueries: the Automation and Sensors pages and the
// schedule and sensor lists of the API read a fixed number of queries,
// the same for 2 schedules and sensors of each kind as for 200 (before,
// the Automation page read 2 queries per schedule, the Sensors page one
// per sensor), and the 200 rows are right.
func TestAutomationPageQueries(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	counts := map[int]map[string]int64{}
	var big *goquery.Document
	var bigSensors *goquery.Document
	for _, n := range []int{2, 200} {
		env := testkit.New(t, testkit.Options{WorkspaceYAML: manyAutomationWS(n)})
		automationHistory(t, env.Store, n, t0)
		tok := env.Token(t, auth.RoleViewer)
		countedGet(t, env, tok, "/automation") // the first request of a token may touch it
		counts[n] = map[string]int64{}
		for _, path := range []string{"/automation", "/sensors", "/api/v1/schedules", "/api/v1/sensors"} {
			code, body, q := countedGet(t, env, tok, path)
			if code != 200 {
				t.Fatalf("%d schedules: GET %s: %d %s", n, path, code, body)
			}
			counts[n][path] = q
			if n == 200 && path == "/automation" {
				big, _ = goquery.NewDocumentFromReader(strings.NewReader(body))
			}
			if n == 200 && path == "/sensors" {
				bigSensors, _ = goquery.NewDocumentFromReader(strings.NewReader(body))
			}
		}
	}
	for path, q := range counts[200] {
		if q != counts[2][path] || q == 0 {
			t.Errorf("GET %s: %d queries with 200 schedules and sensors of each kind, %d with 2: not a fixed number", path, q, counts[2][path])
		}
	}
	t.Logf("queries per request (auth included): %v", counts[200])
	rows := big.Find(`[data-testid="schedule-row"]`)
	if rows.Length() != 200 {
		t.Fatalf("%d schedule rows, want 200", rows.Length())
	}
	rows.Each(func(i int, r *goquery.Selection) {
		want := i % 4
		cells := r.Find(`[data-testid="tick-strip"] rect`)
		last := r.Find(`[data-testid="last-tick"] [data-testid="tick-outcome"]`).AttrOr("data-outcome", "")
		if r.AttrOr("data-name", "") != fmt.Sprintf("s%03d", i) || cells.Length() != want || (want > 0 && (last != "launched" || cells.Last().AttrOr("data-outcome", "") != "launched")) {
			t.Errorf("row %d: name %s, %d cells (want %d), last %q", i, r.AttrOr("data-name", ""), cells.Length(), want, last)
		}
	})
	srows := bigSensors.Find(`[data-testid="sensor-row"]`)
	if srows.Length() != 400 {
		t.Fatalf("%d sensor rows, want 400", srows.Length())
	}
	srows.Each(func(_ int, r *goquery.Selection) {
		var i int
		name := r.AttrOr("data-name", "")
		fmt.Sscanf(strings.TrimLeft(name, "pushol"), "%d", &i)
		last := text(r.Find(`[data-testid="sensor-last"]`))
		switch {
		case i%3 == 0 && last != "nothing yet":
			t.Errorf("%s: last %q, want nothing yet", name, last)
		case i%3 > 0 && strings.HasPrefix(name, "push") && !strings.HasPrefix(last, fmt.Sprintf("event m%d: launched", i%3-1)):
			t.Errorf("%s: last %q, want its newest event m%d", name, last, i%3-1)
		case i%3 > 0 && strings.HasPrefix(name, "poll") && !strings.HasPrefix(last, "dry run"):
			t.Errorf("%s: last %q, want its dry run", name, last)
		}
	})
}

// TestAutomationPageListsSensors (issue 22 audit): the Automation page
// shows every sensor too (the issue: "every schedule and sensor: state,
// next tick or last evaluation, a strip of recent outcomes"), not only the
// schedules: its state with the last error, its last evaluation or event,
// and a strip of the outcomes of its newest ones, oldest first.
func TestAutomationPageListsSensors(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	ctx := t.Context()
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
	// Sizes the workspace leaves out read as what the ticks' backfills get.
	if c, m := text(doc.Find(`[data-testid="def-Chunk size"]`)), text(doc.Find(`[data-testid="def-Max concurrent runs"]`)); c != "1 (the default)" || m != "4 (the default)" {
		t.Errorf("chunk size %q, max concurrent runs %q", c, m)
	}
}

// TestSchedulePrunedTicksShown: ticks older than the retention are pruned
// and the schedule page, GET /api/v1/schedules/{name} and the list say how
// many, with the retention (the server's, here 30 days).
func TestSchedulePrunedTicksShown(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: scheduleWS})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}, AutomationRetention: 30 * 24 * time.Hour})
	sched := env.StartScheduler(t)
	tok := env.Token(t, auth.RoleViewer)
	ctx := t.Context()
	evaluateSince(t, sched, 6*time.Hour) // hourly: 5 missed, 1 launched; regions: 03:00 launched
	viewer := env.Client(t, auth.RoleViewer)
	if _, doc := pgGet(t, env, viewer, "/schedules/hourly"); text(doc.Find(`[data-testid="pruned"]`)) != "no ticks pruned yet (retention 30 days)" {
		t.Fatalf("before: %q", text(doc.Find(`[data-testid="pruned"]`)))
	}
	n, err := sched.Prune(ctx, schedT0.Add(6*time.Hour+31*24*time.Hour))
	if err != nil || n != 7 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	code, doc := pgGet(t, env, viewer, "/schedules/hourly")
	if code != 200 || text(doc.Find(`[data-testid="pruned"]`)) != "6 older ticks pruned (retention 30 days)" || doc.Find(`[data-testid="tick-row"]`).Length() != 0 ||
		text(doc.Find(`[data-testid="counters"]`)) != "1 launched, 5 skipped, 0 failed" {
		t.Fatalf("schedule page: %d pruned %q, counters %q, %d tick rows", code, text(doc.Find(`[data-testid="pruned"]`)),
			text(doc.Find(`[data-testid="counters"]`)), doc.Find(`[data-testid="tick-row"]`).Length())
	}
	code, body := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly", "")
	st, _ := body["state"].(map[string]any)
	if code != 200 || body["retention"] != "30d" || st["pruned_ticks"] != 6.0 || st["ticks_launched"] != 1.0 || body["last_tick"] != nil {
		t.Fatalf("get: %d %v", code, body)
	}
	code, body = apiCall(t, env, tok, "GET", "/api/v1/schedules", "")
	list, _ := body["schedules"].([]any)
	if code != 200 || len(list) != 3 {
		t.Fatalf("list: %d %v", code, body)
	}
	for _, s := range list {
		m := s.(map[string]any)
		want := map[any]float64{"hourly": 6, "regions": 1, "off": 0}[m["name"]]
		if m["retention"] != "30d" || m["state"].(map[string]any)["pruned_ticks"] != want {
			t.Fatalf("list item %v", m)
		}
	}
}
