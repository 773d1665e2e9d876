package handlers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestSchedulePrunedTicksShown: ticks older than the retention are pruned
// and the schedule page, GET /api/v1/schedules/{name} and the list say how
// many, with the retention (the server's, here 30 days).
func TestSchedulePrunedTicksShown(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: scheduleWS})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}, AutomationRetention: 30 * 24 * time.Hour})
	sched := env.StartScheduler(t)
	tok := env.Token(t, auth.RoleViewer)
	ctx := context.Background()
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

// TestSensorPrunedHistoryShown: a pushed event and a poll sensor's
// evaluation pruned after the retention: the sensor pages and the API say
// how many (retention 90 days by default), and the same message id pushed
// again still answers 200, replayed, with its first backfill, marked
// pruned, and launches nothing.
func TestSensorPrunedHistoryShown(t *testing.T) {
	t.Parallel()
	env, sensors, tok := sensorEnv(t)
	ctx := context.Background()
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
