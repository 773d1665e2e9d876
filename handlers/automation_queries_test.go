package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

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
	ctx := context.Background()
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
	ctx, reads := db.CountReads(context.Background())
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
