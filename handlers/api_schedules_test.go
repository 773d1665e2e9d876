package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

var scheduleWS = testkit.Assets(
	testkit.Asset("t.hourly", `{hourly: {start: "2026-01-01-00:00"}}`),
	testkit.Asset("t.regions", "{static: [eu, us]}"),
) + `schedules:
  hourly:
    cron: "5 * * * *"
    timezone: Europe/Berlin
    assets: [t.hourly]
  regions:
    cron: "0 3 * * *"
    assets: [t.regions]
    overlap: allow
  off:
    cron: "0 0 * * *"
    assets: [t.regions]
    enabled: false
`

// schedEnv is a server with the engine and a scheduler whose loop does not
// run (the test evaluates ticks), with an operator's token.
func schedEnv(t *testing.T) (*testkit.Env, *jobs.Scheduler, string) {
	t.Helper()
	env, tok := operatorEnv(t, scheduleWS)
	return env, env.StartScheduler(t), tok
}

// schedT0 is when the schedule tests first evaluate.
var schedT0 = time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)

// evaluateSince evaluates the schedules at schedT0 and again d later: the
// ticks due in between are missed or launched as each one's catch-up says.
func evaluateSince(t *testing.T, sched *jobs.Scheduler, d time.Duration) {
	t.Helper()
	for _, at := range []time.Time{schedT0, schedT0.Add(d)} {
		if err := sched.Evaluate(t.Context(), at); err != nil {
			t.Fatal(err)
		}
	}
}

// scheduleWrites is everything a schedule request could write: the states
// and every tick, as text.
func scheduleWrites(t *testing.T, env *testkit.Env) string {
	t.Helper()
	ctx := t.Context()
	sts, err := env.Store.ScheduleStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(sts)
	out := string(j)
	for _, name := range []string{"hourly", "regions", "off", "nope"} {
		ts, err := env.Store.ScheduleTicks(ctx, name, nil, nil, 100000)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(ts)
		out += string(j)
	}
	bs, err := env.Store.Backfills(ctx, nil, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return out + fmt.Sprint(len(bs))
}

// TestScheduleAPIList: every schedule with its definition, its state and
// its next 5 ticks in its zone and UTC (none while disabled).
func TestScheduleAPIList(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	code, body := apiCall(t, env, tok, "GET", "/api/v1/schedules", "")
	if code != 200 {
		t.Fatalf("%d %v", code, body)
	}
	list := body["schedules"].([]any)
	if len(list) != 3 {
		t.Fatalf("%d schedules: %v", len(list), list)
	}
	h := list[0].(map[string]any)
	if h["name"] != "hourly" || h["cron"] != "5 * * * *" || h["timezone"] != "Europe/Berlin" || h["target"] != "closed_windows" ||
		h["overlap"] != "skip" || h["enabled"] != true || h["chunk_size"].(float64) != float64(jobs.DefaultChunkSize) ||
		h["catchup"].(map[string]any)["window"] != "1d" || h["catchup"].(map[string]any)["max_ticks"].(float64) != 1 || h["last_tick"] != nil {
		t.Fatalf("hourly: %v", h)
	}
	st := h["state"].(map[string]any)
	if st["paused"] != false || st["ticks_launched"].(float64) != 0 || st["evaluated_until"] != nil {
		t.Fatalf("state of a schedule never evaluated: %v", st)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	next := h["next_ticks"].([]any)
	if len(next) != 5 {
		t.Fatalf("next ticks %v", next)
	}
	var prev time.Time
	for _, n := range next {
		n := n.(map[string]any)
		at, err1 := time.Parse(time.RFC3339, n["at"].(string))
		local, err2 := time.Parse(time.RFC3339, n["local"].(string))
		if err1 != nil || err2 != nil || !at.Equal(local) || !strings.HasSuffix(n["at"].(string), "Z") || at.Minute() != 5 || !at.After(prev) {
			t.Fatalf("next tick %v: the same instant in UTC and Berlin, at minute 5, in order", n)
		}
		if zone, _ := at.In(berlin).Zone(); n["zone"] != zone || strings.HasSuffix(n["local"].(string), "Z") {
			t.Fatalf("next tick %v: zone %s", n, zone)
		}
		prev = at
	}
	if off := list[2].(map[string]any); off["name"] != "off" || off["enabled"] != false || len(off["next_ticks"].([]any)) != 0 {
		t.Fatalf("a disabled schedule has no next tick: %v", off)
	}
	code, one := apiCall(t, env, tok, "GET", "/api/v1/schedules/regions", "")
	if code != 200 || one["name"] != "regions" || one["target"] != "all" || one["overlap"] != "allow" || len(one["next_ticks"].([]any)) != 5 {
		t.Fatalf("GET regions: %d %v", code, one)
	}
}

// TestScheduleAPIPauseResume: pause, resume, and each of them again is a
// 409 that says what to do and changes nothing.
func TestScheduleAPIPauseResume(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	code, s := apiCall(t, env, tok, "POST", "/api/v1/schedules/hourly/pause", "")
	st, _ := s["state"].(map[string]any)
	if code != 200 || st["paused"] != true || !strings.HasPrefix(st["paused_by"].(string), "test-operator") || st["paused_at"] == nil {
		t.Fatalf("pause: %d %v", code, s)
	}
	before := scheduleWrites(t, env)
	code, e := apiCall(t, env, tok, "POST", "/api/v1/schedules/hourly/pause", "")
	msg := e["error"].(map[string]any)["message"].(string)
	if code != http.StatusConflict || !strings.Contains(msg, "schedule hourly is already paused") || !strings.Contains(msg, "POST /api/v1/schedules/hourly/resume resumes it") {
		t.Fatalf("pause again: %d %v", code, e)
	}
	if after := scheduleWrites(t, env); after != before {
		t.Fatalf("a refused pause wrote:\n%s\n%s", before, after)
	}
	code, s = apiCall(t, env, tok, "POST", "/api/v1/schedules/hourly/resume", "")
	if code != 200 || s["state"].(map[string]any)["paused"] != false {
		t.Fatalf("resume: %d %v", code, s)
	}
	before = scheduleWrites(t, env)
	code, e = apiCall(t, env, tok, "POST", "/api/v1/schedules/hourly/resume", "")
	if code != http.StatusConflict || !strings.Contains(e["error"].(map[string]any)["message"].(string), "schedule hourly is already running") {
		t.Fatalf("resume again: %d %v", code, e)
	}
	if after := scheduleWrites(t, env); after != before {
		t.Fatalf("a refused resume wrote:\n%s\n%s", before, after)
	}
	// A viewer may read, not pause.
	viewer := env.Token(t, auth.RoleViewer)
	if code, _ := apiCall(t, env, viewer, "POST", "/api/v1/schedules/hourly/pause", ""); code != http.StatusForbidden {
		t.Fatalf("viewer pause: %d", code)
	}
	if after := scheduleWrites(t, env); after != before {
		t.Fatal("a viewer's pause wrote")
	}
}

// TestScheduleAPITrigger: run now answers the manual tick and the backfill
// it launched (created by the schedule), also while the schedule is
// paused; the tick is in the history.
func TestScheduleAPITrigger(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	if code, _ := apiCall(t, env, tok, "POST", "/api/v1/schedules/regions/pause", ""); code != 200 {
		t.Fatal("pause")
	}
	code, r := apiCall(t, env, tok, "POST", "/api/v1/schedules/regions/trigger", "")
	if code != http.StatusCreated {
		t.Fatalf("trigger: %d %v", code, r)
	}
	tick, b := r["tick"].(map[string]any), r["backfill"].(map[string]any)
	if !strings.HasPrefix(tick["id"].(string), "regions:manual:") || tick["outcome"] != "launched" || tick["manual"] != true ||
		tick["backfill_id"] != b["id"] || b["created_by"] != "schedule:regions" || b["total_partitions"].(float64) != 2 {
		t.Fatalf("trigger: tick %v backfill %v", tick, b)
	}
	apiWaitState(t, env, tok, b["id"].(string), "SUCCEEDED")
	code, page := apiCall(t, env, tok, "GET", "/api/v1/schedules/regions/ticks", "")
	ticks := page["ticks"].([]any)
	if code != 200 || len(ticks) != 1 || ticks[0].(map[string]any)["id"] != tick["id"] || page["next_cursor"] != "" {
		t.Fatalf("ticks: %d %v", code, page)
	}
	code, s := apiCall(t, env, tok, "GET", "/api/v1/schedules/regions", "")
	if code != 200 || s["last_tick"].(map[string]any)["id"] != tick["id"] || s["state"].(map[string]any)["last_backfill_id"] != b["id"] ||
		s["state"].(map[string]any)["ticks_launched"].(float64) != 1 {
		t.Fatalf("after trigger: %v", s)
	}
}

// TestScheduleAPITicksPages: ticks newest first, a page at a time, with an
// outcome filter; the cursor walks every tick once.
func TestScheduleAPITicksPages(t *testing.T) {
	t.Parallel()
	env, sched, tok := schedEnv(t)
	// Six hourly ticks fell: the newest is launched (catch-up: 1), the
	// five older ones are missed.
	evaluateSince(t, sched, 6*time.Hour)
	walk := func(query string) []string {
		var ids []string
		cursor := ""
		for i := 0; i < 10; i++ {
			q := query
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			code, page := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?"+q, "")
			if code != 200 {
				t.Fatalf("%s: %d %v", q, code, page)
			}
			for _, tk := range page["ticks"].([]any) {
				ids = append(ids, tk.(map[string]any)["outcome"].(string)+" "+tk.(map[string]any)["scheduled_for"].(string))
			}
			if cursor = page["next_cursor"].(string); cursor == "" {
				return ids
			}
		}
		t.Fatal("the cursor never ended")
		return nil
	}
	all := walk("limit=2")
	if len(all) != 6 || all[0] != "launched 2026-03-01T06:05:00.000Z" || all[5] != "skipped 2026-03-01T01:05:00.000Z" {
		t.Fatalf("every tick, newest first:\n%s", strings.Join(all, "\n"))
	}
	skipped := walk("outcome=skipped&limit=2")
	if len(skipped) != 5 || skipped[0] != "skipped 2026-03-01T05:05:00.000Z" {
		t.Fatalf("skipped:\n%s", strings.Join(skipped, "\n"))
	}
	if got := walk("outcome=launched,failed"); len(got) != 1 || got[0] != "launched 2026-03-01T06:05:00.000Z" {
		t.Fatalf("launched or failed: %v", got)
	}
	code, page := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?limit=1", "")
	tk := page["ticks"].([]any)[0].(map[string]any)
	if code != 200 || tk["scheduled_for_local"] != "2026-03-01T07:05:00.000+01:00" || tk["backfill_id"] == nil || tk["reason"] != nil {
		t.Fatalf("newest tick %v", tk)
	}
	code, sc := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly", "")
	if st := sc["state"].(map[string]any); code != 200 || st["evaluated_until"] != "2026-03-01T06:05:00.000Z" || st["ticks_skipped"].(float64) != 5 || st["ticks_launched"].(float64) != 1 {
		t.Fatalf("state after the ticks: %v", st)
	}
	code, old := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?outcome=skipped&limit=1", "")
	if r := old["ticks"].([]any)[0].(map[string]any)["reason"]; code != 200 || r != "missed: outside the catch-up window" {
		t.Fatalf("a missed tick's reason: %v", r)
	}
}

// TestScheduleAPIPreview: the next tick's backfill as a preview (it writes
// nothing): one hour of the hourly asset, both regions of the static one;
// a paused schedule's preview says its tick would be skipped.
func TestScheduleAPIPreview(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	before := scheduleWrites(t, env)
	code, pv := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/preview", "")
	if code != 200 || pv["skip_reason"] != "" || pv["preview"].(map[string]any)["total_partitions"].(float64) != 1 || pv["tick_at"] == nil {
		t.Fatalf("hourly preview: %d %v", code, pv)
	}
	at, _ := time.Parse(time.RFC3339, pv["tick_at"].(string))
	sel := pv["request"].(map[string]any)["selector"].(map[string]any)
	if want := at.Add(-time.Hour).Truncate(time.Hour).Format("2006-01-02-15:04"); sel["type"] != "range" || sel["start"] != want || sel["end"] != want {
		t.Fatalf("the tick at %s builds the hour %s: %v", at, want, sel)
	}
	if code, pv = apiCall(t, env, tok, "GET", "/api/v1/schedules/regions/preview", ""); code != 200 || pv["preview"].(map[string]any)["total_partitions"].(float64) != 2 {
		t.Fatalf("regions preview: %d %v", code, pv)
	}
	if after := scheduleWrites(t, env); after != before {
		t.Fatal("a preview wrote")
	}
	apiCall(t, env, tok, "POST", "/api/v1/schedules/regions/pause", "")
	if _, pv = apiCall(t, env, tok, "GET", "/api/v1/schedules/regions/preview", ""); !strings.Contains(pv["note"].(string), "paused") {
		t.Fatalf("paused preview: %v", pv)
	}
	if _, pv = apiCall(t, env, tok, "GET", "/api/v1/schedules/off/preview", ""); !strings.Contains(pv["note"].(string), "disabled") {
		t.Fatalf("disabled preview: %v", pv)
	}
}

// TestScheduleAPIUnknownSchedule: every schedule endpoint answers 404 for
// a schedule the workspace does not declare, naming the ones it does, and
// writes nothing.
func TestScheduleAPIUnknownSchedule(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	before := scheduleWrites(t, env)
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/schedules/nope"}, {"GET", "/api/v1/schedules/nope/ticks"}, {"GET", "/api/v1/schedules/nope/preview"},
		{"POST", "/api/v1/schedules/nope/pause"}, {"POST", "/api/v1/schedules/nope/resume"}, {"POST", "/api/v1/schedules/nope/trigger"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			code, e := apiCall(t, env, tok, c.method, c.path, "")
			msg, _ := e["error"].(map[string]any)["message"].(string)
			if code != http.StatusNotFound || msg != `unknown schedule "nope" (the workspace declares hourly, regions, off); GET /api/v1/schedules lists them` {
				t.Fatalf("%d %q", code, msg)
			}
		})
	}
	if after := scheduleWrites(t, env); after != before {
		t.Fatal("an unknown schedule's requests wrote")
	}
}

// TestScheduleAPIBadListInput: an unknown outcome, a cursor the list did
// not give out and a limit out of range are 400s on their parameter that
// say what to send.
func TestScheduleAPIBadListInput(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	for _, c := range []struct{ name, query, field, want string }{
		{"unknown outcome", "outcome=launched,exploded", "outcome", `unknown outcome "exploded"; use launched, queued, skipped, failed (comma-separated), or leave outcome out for every tick`},
		{"bad cursor", "cursor=xyz", "cursor", `cursor "xyz" is not one this list gave out; pass the next_cursor of the previous page, or leave cursor out to start at the first page`},
		{"cursor of another list", "cursor=" + url.QueryEscape("YmY6MTI"), "cursor", "is not one this list gave out"},
		{"limit 0", "limit=0", "limit", `limit must be a whole number from 1 to 1000, got "0"`},
		{"limit not a number", "limit=ten", "limit", `limit must be a whole number from 1 to 1000, got "ten"`},
		{"limit too large", "limit=1001", "limit", `limit must be a whole number from 1 to 1000, got "1001"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, e := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?"+c.query, "")
			er := e["error"].(map[string]any)
			if code != http.StatusBadRequest || er["field"] != c.field || !strings.Contains(er["message"].(string), c.want) {
				t.Fatalf("%d %v", code, er)
			}
		})
	}
}

// TestScheduleTickCursorIsStable: a page's cursor still works after newer
// ticks were recorded (it holds the position, not an offset).
func TestScheduleTickCursorIsStable(t *testing.T) {
	t.Parallel()
	env, sched, tok := schedEnv(t)
	ctx := t.Context()
	evaluateSince(t, sched, 3*time.Hour)
	_, page := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?limit=1", "")
	cursor := page["next_cursor"].(string)
	sched.Evaluate(ctx, schedT0.Add(5*time.Hour))
	_, next := apiCall(t, env, tok, "GET", "/api/v1/schedules/hourly/ticks?limit=1&cursor="+url.QueryEscape(cursor), "")
	if got := next["ticks"].([]any)[0].(map[string]any)["scheduled_for"]; got != "2026-03-01T02:05:00.000Z" {
		t.Fatalf("the second page after newer ticks starts at %v", got)
	}
	_ = db.TickLaunched
}

// TestDemoWorkspaceSchedule: the embedded workspace (`make run`) declares
// raw.events.hourly, whose next tick builds the hour that ends before it.
func TestDemoWorkspaceSchedule(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	env.StartScheduler(t)
	tok := env.Token(t, auth.RoleViewer)
	code, pv := apiCall(t, env, tok, "GET", "/api/v1/schedules/raw.events.hourly/preview", "")
	if code != 200 || pv["skip_reason"] != "" || pv["preview"].(map[string]any)["total_partitions"].(float64) != 1 {
		t.Fatalf("preview: %d %v", code, pv)
	}
	code, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/automation")
	if code != 200 || doc.Find(`[data-testid="schedule-row"][data-name="raw.events.hourly"]`).Length() != 1 {
		t.Fatalf("automation: %d", code)
	}
}

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
