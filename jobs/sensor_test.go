package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// sensorEnv is a real store and engine (controller not running) with the
// sensors given, on a static asset ref.regions [eu, us, ap] and an hourly
// raw.events.
type sensorEnv struct {
	*schedEnv
	sensors *Sensors
}

func newSensorEnv(t *testing.T, sensors string) *sensorEnv {
	t.Helper()
	return newSensorEnvOn(t, db.SQLite, sensors)
}

// newSensorEnvOn is newSensorEnv on a store of dialect d.
// eachSensorEnv runs f on each dialect (teststore.EachDialect) with a
// sensorEnv holding sensors (newSensorEnvOn).
func eachSensorEnv(t *testing.T, sensors string, f func(t *testing.T, e *sensorEnv)) {
	t.Helper()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) { f(t, newSensorEnvOn(t, d, sensors)) })
}

func newSensorEnvOn(t *testing.T, d db.Dialect, sensors string) *sensorEnv {
	t.Helper()
	e := newSchedEnvOn(t, d, "")
	e.reload("sensors:\n" + sensors)
	return &sensorEnv{schedEnv: e, sensors: NewSensors(e.eng, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

func (e *sensorEnv) count(q string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.store.RawReader().GetContext(context.Background(), &n, q, args...); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func wantInputErr(t *testing.T, err error, code string, conflict bool) *InputError {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || ie.Conflict != conflict || (code != "" && ie.Code != code) {
		t.Fatalf("want an input error (code %q, conflict %v), got %v", code, conflict, err)
	}
	return ie
}

// TestPushEventOnce: an event launches one backfill; the same message id
// answers the first outcome and launches nothing, also from 16 concurrent
// senders and after a restart on the same database file.
func TestPushEventOnce(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, "  arrivals:\n    assets: [ref.regions]\n", func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		r, err := e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-1", Partitions: []string{"eu", "us"}}, "bot")
		if err != nil || r.Replayed || r.Event.Outcome != db.EventLaunched || r.Event.BackfillID == nil {
			t.Fatalf("first push: %+v %v", r, err)
		}
		b, _ := e.store.Backfill(ctx, *r.Event.BackfillID)
		if b.TotalPartitions != 2 || b.CreatedBy != "sensor:arrivals" {
			t.Fatalf("backfill %+v", b)
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r2, err := e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-1", Partitions: []string{"ap"}}, "bot")
				if err != nil || !r2.Replayed || *r2.Event.BackfillID != *r.Event.BackfillID {
					t.Errorf("repeat: %+v %v", r2, err)
				}
			}()
		}
		// A new message id from 16 senders at once: one backfill.
		ids := make(chan string, 16)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r3, err := e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-2", Partitions: []string{"ap"}}, "bot")
				if err != nil {
					t.Errorf("m-2: %v", err)
					return
				}
				ids <- *r3.Event.BackfillID
			}()
		}
		wg.Wait()
		close(ids)
		first := ""
		for id := range ids {
			if first == "" {
				first = id
			}
			if id != first {
				t.Fatalf("m-2 answered two backfills: %s and %s", first, id)
			}
		}
		if n := e.count(`SELECT COUNT(*) FROM backfills`); n != 2 {
			t.Fatalf("%d backfills, want 2", n)
		}
		// Restart: a new store and engine on the same file.
		loc := e.store.Location()
		e.store.Close()
		store, err := db.OpenLocation(loc, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		eng, err := NewEngine(ctx, store, func() (*catalog.Workspace, map[string]int64) { return e.ws.Load(), e.ids }, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		r4, err := eng.Push(ctx, "arrivals", PushEvent{MessageID: "m-1", Partitions: []string{"eu"}}, "bot")
		if err != nil || !r4.Replayed || *r4.Event.BackfillID != *r.Event.BackfillID {
			t.Fatalf("after a restart: %+v %v", r4, err)
		}
	})
}

// TestPushEventBadInput: each bad event is refused, says what is wrong,
// and records nothing: no event, no backfill.
func TestPushEventBadInput(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, "  arrivals:\n    assets: [ref.regions]\n", func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		cases := []struct {
			name  string
			ev    PushEvent
			field string
			msg   string
		}{
			{"no message id", PushEvent{Partitions: []string{"eu"}}, "message_id", "message_id is required"},
			{"long message id", PushEvent{MessageID: strings.Repeat("x", 201), Partitions: []string{"eu"}}, "message_id", "at most 200"},
			{"control character", PushEvent{MessageID: "a\nb", Partitions: []string{"eu"}}, "message_id", "printable"},
			{"no partitions", PushEvent{MessageID: "m"}, "partitions", "say which partitions"},
			{"both", PushEvent{MessageID: "m", Partitions: []string{"eu"}, Start: "eu"}, "partitions", "not both"},
			{"unknown partition", PushEvent{MessageID: "m", Partitions: []string{"mars"}}, "selector.keys[0]", "mars"},
			{"foreign asset", PushEvent{MessageID: "m", Assets: []string{"raw.events"}, Partitions: []string{"eu"}}, "assets[0]", "not one of sensor arrivals's assets"},
		}
		for _, tc := range cases {
			_, err := e.eng.Push(ctx, "arrivals", tc.ev, "bot")
			ie := wantInputErr(t, err, "", false)
			if ie.Field != tc.field || !strings.Contains(ie.Msg, tc.msg) {
				t.Errorf("%s: field %q msg %q; want %q and %q", tc.name, ie.Field, ie.Msg, tc.field, tc.msg)
			}
		}
		_, err := e.eng.Push(ctx, "nope", PushEvent{MessageID: "m", Partitions: []string{"eu"}}, "bot")
		if ie := wantInputErr(t, err, CodeUnknownSensor, false); !ie.NotFound || ie.Params["known"] != "arrivals" {
			t.Fatalf("unknown sensor: %+v", ie)
		}
		// Nor a state: the sensor's state is created with its first event
		// recorded (or a pause), and a resume of a running sensor is refused.
		_, err = e.sensors.SetPaused(ctx, "arrivals", false, "alice")
		wantInputErr(t, err, CodeSensorState, true)
		if n := e.count(`SELECT COUNT(*) FROM sensor_state`); n != 0 {
			t.Fatalf("refused events and a refused resume created %d sensor states", n)
		}
		if _, err := e.sensors.SetPaused(ctx, "arrivals", true, "alice"); err != nil {
			t.Fatal(err)
		}
		_, err = e.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m", Partitions: []string{"eu"}}, "bot")
		wantInputErr(t, err, CodeSensorPaused, true)
		if n := e.count(`SELECT COUNT(*) FROM sensor_events`) + e.count(`SELECT COUNT(*) FROM backfills`); n != 0 {
			t.Fatalf("bad input wrote %d rows", n)
		}
	})
}

// counterEvaluator answers the cursor plus one and a request of eu with
// run key k{n}; runKey overrides the key.
func counterEvaluator(runKey string) string {
	key := `k$n`
	if runKey != "" {
		key = runKey
	}
	return `'c=${TESSERA_SENSOR_CURSOR:-0}; n=$((c+1)); echo "{\"cursor\": \"$n\", \"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"` + key + `\"}]}"'`
}

func pollSensor(name, script string, extra string) string {
	return "  " + name + ":\n    assets: [ref.regions]\n    evaluator: {command: [sh, -c, " + script + "]}\n    interval: 1s\n" + extra
}

// TestPollSensorCursorAndRunKeys: each evaluation moves the cursor with
// the backfills it launched; a run key launches at most once, ever.
func TestPollSensorCursorAndRunKeys(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, pollSensor("counter", counterEvaluator(""), "")+pollSensor("same", counterEvaluator("always"), ""), func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		for i := 1; i <= 2; i++ {
			ev, err := e.sensors.Evaluate(ctx, "counter", false, "alice")
			if err != nil || ev.Record.Error != nil || len(ev.Outcomes) != 1 || ev.Outcomes[0].Backfill == "" {
				t.Fatalf("evaluation %d: %+v %v", i, ev, err)
			}
		}
		st, _ := e.store.SensorStateOf(ctx, "counter")
		if st.Cursor == nil || *st.Cursor != "2" || st.Launches != 2 || st.Status != db.SensorOK {
			t.Fatalf("state %+v", st)
		}
		for i := 1; i <= 2; i++ {
			if _, err := e.sensors.Evaluate(ctx, "same", false, "alice"); err != nil {
				t.Fatal(err)
			}
		}
		st, _ = e.store.SensorStateOf(ctx, "same")
		keys, _ := e.store.SensorRunKeys(ctx, "same", "", "", 10)
		if st.Launches != 1 || *st.Cursor != "2" || len(keys) != 1 || keys[0].RunKey != "always" {
			t.Fatalf("run key 'always' twice: state %+v keys %+v", st, keys)
		}
		evs, _ := e.store.SensorEvaluations(ctx, "same", 0, 10)
		if len(evs) != 2 || !strings.Contains(evs[0].Requests, "launched already") {
			t.Fatalf("evaluations %+v", evs)
		}
	})
}

// TestPollSensorFailuresKeepTheCursor: an evaluator that fails, times out,
// answers non-JSON or an unknown asset launches nothing, keeps the cursor,
// and shows ERROR with its message and log.
func TestPollSensorFailuresKeepTheCursor(t *testing.T) {
	t.Parallel()
	e := newSensorEnv(t,
		pollSensor("fails", `'echo "no upstream" >&2; exit 3'`, "")+
			pollSensor("slow", `'sleep 5'`, "    timeout: 1s\n")+
			pollSensor("text", `'echo hello'`, "")+
			pollSensor("foreign", `'echo "{\"cursor\": \"9\", \"run_requests\": [{\"assets\": [\"raw.events\"], \"partitions\": [\"eu\"]}]}"'`, ""))
	ctx := context.Background()
	for _, tc := range []struct{ name, msg, log string }{
		{"fails", "exited with status 3", "no upstream"},
		{"slow", "did not answer within its timeout, 1s", ""},
		{"text", "not the JSON expected", ""},
		{"foreign", "not one of sensor foreign's assets", ""},
	} {
		if _, err := e.store.ResetSensorCursor(ctx, tc.name, ptr("start"), "admin", 1); err != nil {
			// the state does not exist yet: create it first
			if _, err := e.store.EnsureSensorState(ctx, tc.name, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.ResetSensorCursor(ctx, tc.name, ptr("start"), "admin", 1); err != nil {
				t.Fatal(err)
			}
		}
		ev, err := e.sensors.Evaluate(ctx, tc.name, false, "alice")
		if err != nil || ev.Record.Error == nil || !strings.Contains(*ev.Record.Error, tc.msg) {
			t.Fatalf("%s: %+v %v; want error %q", tc.name, ev.Record, err, tc.msg)
		}
		if tc.log != "" && (ev.Record.LogTail == nil || !strings.Contains(*ev.Record.LogTail, tc.log)) {
			t.Fatalf("%s: log %v, want %q", tc.name, ev.Record.LogTail, tc.log)
		}
		st, _ := e.store.SensorStateOf(ctx, tc.name)
		if st.Cursor == nil || *st.Cursor != "start" || st.Status != db.SensorError || st.Failures != 1 || st.LastError == nil {
			t.Fatalf("%s: state %+v, want the cursor kept and ERROR", tc.name, st)
		}
	}
	if n := e.count(`SELECT COUNT(*) FROM backfills`); n != 0 {
		t.Fatalf("failed evaluations launched %d backfills", n)
	}
}

func ptr(s string) *string { return &s }

// TestPollSensorDryRunAndCAS: a dry run shows the requests with a preview
// and moves nothing; of two evaluations at once (the one-at-a-time guard
// bypassed), exactly one launches and moves the cursor.
func TestPollSensorDryRunAndCAS(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, pollSensor("counter", `'sleep 0.3; `+strings.TrimPrefix(counterEvaluator(""), "'"), ""), func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		ev, err := e.sensors.Evaluate(ctx, "counter", true, "alice")
		if err != nil || ev.Record.Kind != db.EvalDryRun || len(ev.Outcomes) != 1 || ev.Outcomes[0].Preview == nil || ev.Outcomes[0].Backfill != "" {
			t.Fatalf("dry run: %+v %v", ev, err)
		}
		st, _ := e.store.SensorStateOf(ctx, "counter")
		if st.Cursor != nil || e.count(`SELECT COUNT(*) FROM backfills`) != 0 {
			t.Fatalf("a dry run moved the cursor (%v) or launched", st.Cursor)
		}
		// The guard refuses a second evaluation while one runs.
		sn := e.ws.Load().Sensor("counter")
		var wg sync.WaitGroup
		results := make([]Evaluation, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], _ = e.sensors.evaluate(ctx, sn, false, "t")
			}()
		}
		wg.Wait()
		st, _ = e.store.SensorStateOf(ctx, "counter")
		if st.Cursor == nil || *st.Cursor != "1" || e.count(`SELECT COUNT(*) FROM backfills`) != 1 {
			t.Fatalf("two evaluations at once: cursor %v, %d backfills; want 1 and 1", st.Cursor, e.count(`SELECT COUNT(*) FROM backfills`))
		}
		lost := 0
		for _, r := range results {
			if r.Record.Error != nil && strings.Contains(*r.Record.Error, "cursor moved") {
				lost++
			}
		}
		if lost != 1 {
			t.Fatalf("want one evaluation to lose the compare-and-set, got %d: %+v", lost, results)
		}
		// Reset is recorded with who did it.
		if _, err := e.sensors.ResetCursor(ctx, "counter", nil, "admin"); err != nil {
			t.Fatal(err)
		}
		evs, _ := e.store.SensorEvaluations(ctx, "counter", 0, 1)
		if len(evs) != 1 || evs[0].Kind != db.EvalReset || evs[0].Actor != "admin" || evs[0].CursorBefore == nil || *evs[0].CursorBefore != "1" {
			t.Fatalf("reset record %+v", evs)
		}
		_, err = e.sensors.Evaluate(ctx, "nope", false, "a")
		wantInputErr(t, err, CodeUnknownSensor, false)
	})
}

// TestPollSensorAnswerWithMoreAfterItFails: an answer that is one JSON
// object followed by text or by a second object is refused as a whole: it
// launches nothing, keeps the cursor and says what came after the object.
func TestPollSensorAnswerWithMoreAfterItFails(t *testing.T) {
	t.Parallel()
	req := `\"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"once\"}]`
	e := newSensorEnv(t,
		pollSensor("trailing", `'echo "{\"cursor\": \"9\", `+req+`} done"'`, "")+
			pollSensor("two", `'echo "{\"cursor\": \"9\", `+req+`}{\"cursor\": \"10\"}"'`, "")+
			pollSensor("spaces", `'printf "{\"cursor\": \"9\"}\n\n  \n"'`, ""))
	ctx := context.Background()
	for _, tc := range []struct{ name, after string }{
		{"trailing", `"done"`},
		{"two", `"{\"cursor\": \"10\"}"`},
	} {
		ev, err := e.sensors.Evaluate(ctx, tc.name, false, "alice")
		if err != nil || ev.Record.Error == nil || !strings.Contains(*ev.Record.Error, "not one JSON object: after the object comes "+tc.after) {
			t.Fatalf("%s: %+v %v; want the answer refused, naming what followed the object", tc.name, ev.Record, err)
		}
		st, _ := e.store.SensorStateOf(ctx, tc.name)
		if st.Cursor != nil || st.Status != db.SensorError || st.Launches != 0 {
			t.Fatalf("%s: state %+v, want no cursor, ERROR, nothing launched", tc.name, st)
		}
	}
	if n := e.count(`SELECT COUNT(*) FROM backfills`); n != 0 {
		t.Fatalf("refused answers launched %d backfills", n)
	}
	// White space after the object is fine.
	ev, err := e.sensors.Evaluate(ctx, "spaces", false, "alice")
	if err != nil || ev.Record.Error != nil || ev.Record.CursorAfter == nil || *ev.Record.CursorAfter != "9" {
		t.Fatalf("spaces: %+v %v; want the cursor 9", ev.Record, err)
	}
}

// TestPollSensorAnswerOverTheLimitFails: a command that prints more than
// the 1 MiB an answer may be fails with a message saying so (not a JSON
// error about its cut-off first MiB), launches nothing and keeps the cursor.
func TestPollSensorAnswerOverTheLimitFails(t *testing.T) {
	t.Parallel()
	e := newSensorEnv(t,
		pollSensor("huge", `'printf "{\"skip_reason\": \""; head -c 2000000 /dev/zero | tr "\\0" x; printf "\"}"'`, "")+
			pollSensor("exact", `'printf "{\"skip_reason\": \""; head -c 1048500 /dev/zero | tr "\\0" x; printf "\"}"'`, ""))
	ctx := context.Background()
	ev, err := e.sensors.Evaluate(ctx, "huge", false, "alice")
	if err != nil || ev.Record.Error == nil || !strings.Contains(*ev.Record.Error, "printed more than 1048576 bytes on stdout") {
		t.Fatalf("huge: %+v %v; want the answer refused as too large", ev.Record, err)
	}
	st, _ := e.store.SensorStateOf(ctx, "huge")
	if st.Cursor != nil || st.Status != db.SensorError {
		t.Fatalf("huge: state %+v, want ERROR and no cursor", st)
	}
	// An answer within the limit is read whole.
	ev, err = e.sensors.Evaluate(ctx, "exact", false, "alice")
	if err != nil || ev.Record.Error != nil || ev.Record.SkipReason == nil || len(*ev.Record.SkipReason) != 1048500 {
		t.Fatalf("exact: %v %v; want the answer read", head([]byte(deref(ev.Record.Error)), 300), err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestPollSensorBackoffOfALongIntervalStaysAhead: a failing sensor with a
// long interval waits at most an hour after each failure, also after many
// in a row (the doubled interval overflowed into a wait in the past from
// the 17th failure of a daily sensor, so the scheduler evaluated it on
// every tick).
func TestPollSensorBackoffOfALongIntervalStaysAhead(t *testing.T) {
	t.Parallel()
	e := newSensorEnv(t, "  daily:\n    assets: [ref.regions]\n    evaluator: {command: [sh, -c, 'exit 1']}\n    interval: 24h\n")
	ctx := context.Background()
	for i := 1; i <= 22; i++ {
		ev, err := e.sensors.Evaluate(ctx, "daily", false, "alice")
		if err != nil || ev.Record.Error == nil {
			t.Fatalf("evaluation %d: %+v %v; want it failed", i, ev.Record, err)
		}
		st, _ := e.store.SensorStateOf(ctx, "daily")
		if st.Failures != int64(i) || st.NextEvaluationAt == nil || *st.NextEvaluationAt != ev.Record.StartedAt+time.Hour.Milliseconds() {
			t.Fatalf("after failure %d: failures %d, next evaluation %v, want an hour after %d", i, st.Failures, st.NextEvaluationAt, ev.Record.StartedAt)
		}
	}
	for _, tc := range []struct {
		interval time.Duration
		failures int64
		want     time.Duration
	}{{3 * time.Second, 1, 6 * time.Second}, {3 * time.Second, 3, 24 * time.Second}, {3 * time.Second, 64, time.Hour}, {40 * time.Minute, 1, time.Hour}} {
		if got := backoff(tc.interval, tc.failures); got != tc.want {
			t.Fatalf("backoff(%s, %d) = %s, want %s", tc.interval, tc.failures, got, tc.want)
		}
	}
}

// TestPollSensorDryRunSkipsUsedRunKeys: a dry run says a request whose run
// key was used already (or repeats one of the same answer) would launch
// nothing, as the evaluation does, rather than preview a backfill for it.
func TestPollSensorDryRunSkipsUsedRunKeys(t *testing.T) {
	t.Parallel()
	eachSensorEnv(t, pollSensor("same", `'echo "{\"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"once\"}, {\"partitions\": [\"us\"], \"run_key\": \"twice\"}, {\"partitions\": [\"ap\"], \"run_key\": \"twice\"}]}"'`, ""), func(t *testing.T, e *sensorEnv) {
		ctx := context.Background()
		dry, err := e.sensors.Evaluate(ctx, "same", true, "alice")
		if err != nil || dry.Record.Error != nil || len(dry.Outcomes) != 3 || dry.Outcomes[0].Preview == nil || dry.Outcomes[1].Preview == nil ||
			dry.Outcomes[2].Preview != nil || !strings.Contains(dry.Outcomes[2].Skipped, "run_key twice launched already") {
			t.Fatalf("first dry run: %+v %v; want the first two previewed, the repeated key skipped", dry.Outcomes, err)
		}
		ev, err := e.sensors.Evaluate(ctx, "same", false, "alice")
		if err != nil || ev.Record.Error != nil || ev.Outcomes[0].Backfill == "" || ev.Outcomes[1].Backfill == "" || ev.Outcomes[2].Skipped == "" {
			t.Fatalf("evaluation: %+v %v", ev.Outcomes, err)
		}
		dry, err = e.sensors.Evaluate(ctx, "same", true, "alice")
		if err != nil || dry.Record.Error != nil || len(dry.Outcomes) != 3 {
			t.Fatalf("second dry run: %+v %v", dry, err)
		}
		for i, o := range dry.Outcomes {
			if o.Preview != nil || !strings.Contains(o.Skipped, "launched already") {
				t.Fatalf("second dry run, request %d: %+v; want it skipped (its run key is used), with no preview", i+1, o)
			}
		}
		evs, _ := e.store.SensorEvaluations(ctx, "same", 0, 1)
		if len(evs) != 1 || strings.Count(evs[0].Requests, "launched already") != 3 {
			t.Fatalf("recorded dry run %+v; want its three requests recorded as skipped", evs)
		}
	})
}

// TestPollSensorEvaluatorLeftoversAreKilled: a process the evaluator
// started in the background and left running when it exited is killed
// with its group, so evaluations every interval do not pile them up.
func TestPollSensorEvaluatorLeftoversAreKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	e := newSensorEnv(t, pollSensor("helper", `'sleep 300 >/dev/null 2>&1 & echo $! > `+pidFile+`; echo "{\"skip_reason\": \"nothing new\"}"'`, ""))
	ev, err := e.sensors.Evaluate(context.Background(), "helper", false, "alice")
	if err != nil || ev.Record.Error != nil || ev.Record.SkipReason == nil {
		t.Fatalf("evaluation: %+v %v", ev.Record, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	poll.Eventually(t, 10*time.Second, "the evaluator's background sleep to be killed", func() bool {
		st, err := readProcStat(pid)
		return err != nil || st.state == "Z"
	})
}

// TestPollSensorEvaluatorDoesNotInheritServerSettings: a command evaluator
// gets the server's environment without the server's own TESSERA_*
// settings (session keys, tokens, the database URL), as an asset's command
// does; the rest of it, its declared env and the sensor's variables it
// gets. Not parallel: t.Setenv.
func TestPollSensorEvaluatorDoesNotInheritServerSettings(t *testing.T) {
	t.Setenv("TESSERA_SESSION_KEYS", "server-secret")
	t.Setenv("SENSOR_TEST_INHERITED", "inherited")
	script := `'echo "{\"skip_reason\": \"keys=[$TESSERA_SESSION_KEYS] inherited=[$SENSOR_TEST_INHERITED] declared=[$DECLARED] name=[$TESSERA_SENSOR_NAME]\"}"'`
	e := newSensorEnv(t, "  env:\n    assets: [ref.regions]\n    evaluator: {command: [sh, -c, "+script+"], env: {DECLARED: yes}}\n")
	ev, err := e.sensors.Evaluate(context.Background(), "env", false, "alice")
	if err != nil || ev.Record.Error != nil || ev.Record.SkipReason == nil {
		t.Fatalf("evaluation: %+v %v", ev.Record, err)
	}
	if got, want := *ev.Record.SkipReason, "keys=[] inherited=[inherited] declared=[yes] name=[env]"; got != want {
		t.Fatalf("the evaluator saw %q, want %q", got, want)
	}
}

// TestPollSensorOrphansOfADeadServerAreKilled: a server killed while its
// sensor's evaluator ran leaves what the evaluator started in the
// background (the server's death kills only the evaluator itself); the
// sensor's next evaluation, by the server started again, kills that group,
// as the proc file beside the reports names it and its server is gone. A
// group whose file names a server that runs (this process: another
// server's evaluator, running) is left alone.
func TestPollSensorOrphansOfADeadServerAreKilled(t *testing.T) {
	t.Parallel()
	e := newSensorEnv(t, pollSensor("helper", `'echo "{\"skip_reason\": \"nothing new\"}"'`, ""))
	path := e.sensors.procFile("helper")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A group as a crash leaves it: its own process group, still running.
	orphanGroup := func() (*exec.Cmd, procStat) {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		st, err := readProcStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, st
	}
	record := func(pgid int, st procStat, server int, serverStart uint64) {
		line := fmt.Sprintf("%d %d %d %d %d\n", pgid, st.session, st.startTime, server, serverStart)
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gone := exec.Command("true") // a server that has exited
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	orphan, st := orphanGroup()
	exited := make(chan struct{})
	go func() { _ = orphan.Wait(); close(exited) }()
	record(orphan.Process.Pid, st, gone.Process.Pid, 12345)
	if ev, err := e.sensors.Evaluate(context.Background(), "helper", false, "alice"); err != nil || ev.Record.Error != nil {
		t.Fatalf("evaluation: %+v %v", ev.Record, err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the dead server's evaluator group still runs after the next evaluation")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("proc file after the evaluation: %v, want none (the evaluation's own is removed when it ends)", err)
	}

	self, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	running, st := orphanGroup()
	record(running.Process.Pid, st, os.Getpid(), self.startTime)
	if ev, err := e.sensors.Evaluate(context.Background(), "helper", false, "alice"); err != nil || ev.Record.Error != nil {
		t.Fatalf("evaluation: %+v %v", ev.Record, err)
	}
	if st, err := readProcStat(running.Process.Pid); err != nil || st.state == "Z" {
		t.Errorf("a group whose server runs was killed (%v, %q)", err, st.state)
	}
}
