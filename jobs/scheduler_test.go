package jobs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// schedEnv is a real store and engine (its controller not running, so
// launched backfills stay PENDING) with a workspace that can be reloaded,
// and a scheduler evaluated at chosen instants.
type schedEnv struct {
	t     *testing.T
	store *db.Store
	eng   *Engine
	sched *Scheduler
	ws    atomic.Pointer[catalog.Workspace]
	ids   map[string]int64
}

var schedAssets = teststore.Assets(
	teststore.Asset("raw.events", `{hourly: {start: "2026-01-01-00:00"}}`, "executor: {demo: {duration: 1s}}"),
	teststore.Asset("ref.regions", "{static: [eu, us, ap]}", "executor: {demo: {duration: 1s}}"),
) + `schedules:
`

// eachSchedEnv runs f on each dialect (teststore.EachDialect) with a
// schedEnv holding schedules (newSchedEnvOn).
func eachSchedEnv(t *testing.T, schedules string, f func(t *testing.T, e *schedEnv)) {
	t.Helper()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) { f(t, newSchedEnvOn(t, d, schedules)) })
}

// newSchedEnvOn opens a store of dialect d with the schedules and an engine
// and a scheduler on it.
func newSchedEnvOn(t *testing.T, d db.Dialect, schedules string) *schedEnv {
	t.Helper()
	store := teststore.OpenOn(t, d)
	e := &schedEnv{t: t, store: store}
	e.reload(schedules)
	eng, err := NewEngine(context.Background(), store, func() (*catalog.Workspace, map[string]int64) { return e.ws.Load(), e.ids },
		slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.eng = eng
	e.sched = NewScheduler(eng, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return e
}

func (e *schedEnv) reload(schedules string) {
	e.t.Helper()
	ws, err := catalog.ParseWorkspace("t.yaml", []byte(schedAssets+schedules))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.store.SyncWorkspace(ctx, ws, "test", time.Now()); err != nil {
		e.t.Fatal(err)
	}
	if e.ids, err = e.store.AssetIDs(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.ws.Store(ws)
}

func (e *schedEnv) eval(now time.Time) {
	e.t.Helper()
	if err := e.sched.Evaluate(context.Background(), now); err != nil {
		e.t.Fatal(err)
	}
}

// ticks lists a schedule's ticks oldest first.
func (e *schedEnv) ticks(name string) []db.Tick {
	e.t.Helper()
	ts, err := e.store.ScheduleTicks(context.Background(), name, nil, nil, 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts
}

func (e *schedEnv) backfills() []db.Backfill {
	e.t.Helper()
	bs, err := e.store.Backfills(context.Background(), nil, "", 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return bs
}

func tickSummary(ts []db.Tick) string {
	var b strings.Builder
	for _, t := range ts {
		r := ""
		if t.Reason != nil {
			r = " (" + *t.Reason + ")"
		}
		b.WriteString(time.UnixMilli(t.ScheduledFor).UTC().Format("15:04:05") + " " + t.Outcome + r + "\n")
	}
	return b.String()
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestScheduleTickLaunchesTheHourThatEnded: an hourly tick at :05 launches
// one backfill of the hour that ended, with the tick id as its
// idempotency key; evaluating again launches nothing more.
func TestScheduleTickLaunchesTheHourThatEnded(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  hourly:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n", func(t *testing.T, e *schedEnv) {
		e.eval(at(t, "2026-03-01 09:30:00")) // first seen: nothing owed before now
		if n := len(e.ticks("hourly")); n != 0 {
			t.Fatalf("a new schedule launched %d past ticks", n)
		}
		e.eval(at(t, "2026-03-01 10:06:00"))
		e.eval(at(t, "2026-03-01 10:07:00"))
		ts := e.ticks("hourly")
		if len(ts) != 1 || ts[0].Outcome != db.TickLaunched || ts[0].ID != "hourly:"+strconv.FormatInt(at(t, "2026-03-01 10:05:00").Unix(), 10) || ts[0].BackfillID == nil {
			t.Fatalf("ticks:\n%s%+v", tickSummary(ts), ts)
		}
		bs := e.backfills()
		if len(bs) != 1 || bs[0].ID != *ts[0].BackfillID || bs[0].TotalPartitions != 1 || bs[0].CreatedBy != "schedule:hourly" {
			t.Fatalf("backfills %+v", bs)
		}
		if !strings.Contains(bs[0].Selector, `"start":"2026-03-01-09:00"`) || !strings.Contains(bs[0].Selector, `"end":"2026-03-01-09:00"`) {
			t.Fatalf("selector %s, want the hour 09:00 that ended at 10:00", bs[0].Selector)
		}
		st, _ := e.store.ScheduleStateOf(context.Background(), "hourly")
		if st.TicksLaunched != 1 || st.LastBackfillID == nil || *st.LastBackfillID != bs[0].ID {
			t.Fatalf("state %+v", st)
		}
	})
}

// TestScheduleCrashBetweenBackfillAndTick: the backfill of a tick was
// created but the process died before the tick was recorded; the next
// evaluation records the tick with that backfill and creates no other.
func TestScheduleCrashBetweenBackfillAndTick(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  hourly:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		e.eval(at(t, "2026-03-01 09:30:00"))
		tickAt := at(t, "2026-03-01 10:05:00")
		sc := e.ws.Load().Schedule("hourly")
		req, skip, err := e.eng.TickRequest(ctx, sc, tickAt)
		if err != nil || skip != "" {
			t.Fatal(err, skip)
		}
		b, err := e.eng.Create(ctx, req, catalog.TickID("hourly", tickAt), scheduleActor("hourly"))
		if err != nil {
			t.Fatal(err)
		}
		// The server comes back two days later: the tick is outside the
		// catch-up window now, and still recorded as the launch it was.
		e.eval(at(t, "2026-03-03 10:06:00"))
		ts := e.ticks("hourly")
		if len(ts) != 49 || ts[0].Outcome != db.TickLaunched || *ts[0].BackfillID != b.Backfill.ID {
			t.Fatalf("%d ticks:\n%s", len(ts), tickSummary(ts[:min(3, len(ts))]))
		}
		// The newest tick is within the window, but the recovered tick's
		// backfill has not ended (no controller runs here): overlap skip.
		if ts[1].Outcome != db.TickSkipped || *ts[1].Reason != catalog.MissedOutsideWindow || ts[48].Outcome != db.TickSkipped ||
			!strings.Contains(*ts[48].Reason, b.Backfill.ID) {
			t.Fatalf("after the recovered tick: missed ones, then the newest skipped for the running one:\n%s", tickSummary(ts))
		}
		if n := len(e.backfills()); n != 1 {
			t.Fatalf("%d backfills, want only the one created before the crash", n)
		}
	})
}

// TestScheduleCatchUp: a per-second schedule evaluated 20 s after its last
// tick, with a 5 s window and at most 3 ticks, launches the 3 newest of the
// window, oldest first, and records the 17 older ones as missed.
func TestScheduleCatchUp(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  every_second:\n    cron: \"* * * * * *\"\n    assets: [ref.regions]\n    overlap: allow\n    catchup: {window: 5s, max_ticks: 3}\n", func(t *testing.T, e *schedEnv) {
		e.eval(at(t, "2026-03-01 10:00:00"))
		e.eval(at(t, "2026-03-01 10:00:20"))
		ts := e.ticks("every_second")
		if len(ts) != 20 {
			t.Fatalf("%d ticks, want 20:\n%s", len(ts), tickSummary(ts))
		}
		for i, tk := range ts {
			want := db.TickSkipped
			if i >= 17 {
				want = db.TickLaunched
			}
			if tk.Outcome != want || (want == db.TickSkipped && (tk.Reason == nil || *tk.Reason != catalog.MissedOutsideWindow)) {
				t.Fatalf("tick %d: %s %v, want %s\n%s", i, tk.Outcome, tk.Reason, want, tickSummary(ts))
			}
		}
		if n := len(e.backfills()); n != 3 {
			t.Fatalf("%d backfills, want 3", n)
		}
	})
}

// TestSchedulePauseResume: ticks that fall while a schedule is paused are
// recorded as skipped and never launched after it resumes; the next tick
// after the resume launches.
func TestSchedulePauseResume(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  minutely:\n    cron: \"* * * * *\"\n    assets: [ref.regions]\n    overlap: allow\n    catchup: {window: 1h, max_ticks: 100}\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		e.eng.Now = func() time.Time { return at(t, "2026-03-01 10:00:30") }
		e.eval(at(t, "2026-03-01 10:00:30"))
		if _, err := e.sched.SetPaused(ctx, "minutely", true, "alice"); err != nil {
			t.Fatal(err)
		}
		_, err := e.sched.SetPaused(ctx, "minutely", true, "alice")
		var ie *InputError
		if !errors.As(err, &ie) || !ie.Conflict || ie.Code != CodeScheduleState {
			t.Fatalf("pausing twice: %v, want a conflict", err)
		}
		// Down while paused: five minutes pass unevaluated; the resume records
		// them as paused.
		e.eng.Now = func() time.Time { return at(t, "2026-03-01 10:05:30") }
		if _, err := e.sched.SetPaused(ctx, "minutely", false, "alice"); err != nil {
			t.Fatal(err)
		}
		e.eval(at(t, "2026-03-01 10:06:30"))
		ts := e.ticks("minutely")
		if len(ts) != 6 {
			t.Fatalf("ticks:\n%s", tickSummary(ts))
		}
		for _, tk := range ts[:5] {
			if tk.Outcome != db.TickSkipped || *tk.Reason != SkipPaused {
				t.Fatalf("ticks while paused:\n%s", tickSummary(ts))
			}
		}
		if ts[5].Outcome != db.TickLaunched || len(e.backfills()) != 1 {
			t.Fatalf("the tick after the resume should launch, and only it:\n%s", tickSummary(ts))
		}
	})
}

// TestScheduleCronEditDoesNotRerun: a reload that changes the cron does
// not run ticks before the last one again.
func TestScheduleCronEditDoesNotRerun(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  s:\n    cron: \"0 * * * *\"\n    assets: [ref.regions]\n    overlap: allow\n", func(t *testing.T, e *schedEnv) {
		e.eval(at(t, "2026-03-01 09:30:00"))
		e.eval(at(t, "2026-03-01 12:30:00")) // 10:00, 11:00, 12:00; one caught up
		before := len(e.ticks("s"))
		e.reload("  s:\n    cron: \"30 * * * *\"\n    assets: [ref.regions]\n    overlap: allow\n    catchup: {window: 48h, max_ticks: 100}\n")
		e.eval(at(t, "2026-03-01 12:45:00"))
		ts := e.ticks("s")
		if len(ts) != before+1 || time.UnixMilli(ts[len(ts)-1].ScheduledFor).UTC() != at(t, "2026-03-01 12:30:00") {
			t.Fatalf("after the edit only 12:30 is new:\n%s", tickSummary(ts))
		}
		if ts[len(ts)-1].DefinitionHash == ts[0].DefinitionHash {
			t.Fatal("the tick after the edit should record the new definition's hash")
		}
	})
}

// TestScheduleOverlap: with overlap skip, a tick while the previous tick's
// backfill runs is skipped and says which; with queue it waits and
// launches once that backfill has ended.
func TestScheduleOverlap(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  skip:\n    cron: \"0 * * * *\"\n    assets: [ref.regions]\n  queue:\n    cron: \"0 * * * *\"\n    assets: [ref.regions]\n    overlap: queue\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		e.eval(at(t, "2026-03-01 09:30:00"))
		e.eval(at(t, "2026-03-01 10:00:10"))
		e.eval(at(t, "2026-03-01 11:00:10"))
		skip := e.ticks("skip")
		if len(skip) != 2 || skip[0].Outcome != db.TickLaunched || skip[1].Outcome != db.TickSkipped || !strings.Contains(*skip[1].Reason, *skip[0].BackfillID) {
			t.Fatalf("skip:\n%s", tickSummary(skip))
		}
		queue := e.ticks("queue")
		if len(queue) != 2 || queue[1].Outcome != db.TickQueued {
			t.Fatalf("queue:\n%s", tickSummary(queue))
		}
		if _, err := e.eng.Transition(ctx, *queue[0].BackfillID, ActCancel, 0, false, "t"); err != nil {
			t.Fatal(err)
		}
		e.eval(at(t, "2026-03-01 11:00:20"))
		queue = e.ticks("queue")
		if len(queue) != 2 || queue[1].Outcome != db.TickLaunched || queue[1].BackfillID == nil {
			t.Fatalf("the queued tick should launch once the previous backfill ended:\n%s", tickSummary(queue))
		}
	})
}

// TestScheduleTrigger: run now launches a manual tick even while paused;
// an unknown schedule is a 404 that names the known ones.
func TestScheduleTrigger(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  s:\n    cron: \"0 0 1 1 *\"\n    assets: [ref.regions]\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		if _, err := e.sched.SetPaused(ctx, "s", true, "alice"); err != nil {
			t.Fatal(err)
		}
		r, err := e.sched.Trigger(ctx, "s", "alice")
		if err != nil || r.Tick.Outcome != db.TickLaunched || !strings.HasPrefix(r.Tick.ID, "s:manual:") || r.Backfill == nil || !r.Tick.Manual {
			t.Fatalf("trigger: %+v %v", r, err)
		}
		_, err = e.sched.Trigger(ctx, "nope", "alice")
		var ie *InputError
		if !errors.As(err, &ie) || !ie.NotFound || ie.Code != CodeUnknownSchedule || ie.Params["known"] != "s" {
			t.Fatalf("unknown schedule: %v", err)
		}
	})
}

// TestScheduleNothingToBuild: a tick that targets no partition is skipped
// with the reason, and launches nothing.
func TestScheduleNothingToBuild(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		// Every minute on an hourly asset: most minutes close no hour.
		e := newSchedEnvOn(t, dialect, "  s:\n    cron: \"* * * * *\"\n    assets: [raw.events]\n    catchup: {window: 1h, max_ticks: 10}\n")
		e.eval(at(t, "2026-03-01 10:01:30"))
		e.eval(at(t, "2026-03-01 10:03:30"))
		ts := e.ticks("s")
		if len(ts) != 2 || ts[0].Outcome != db.TickSkipped || !strings.HasPrefix(*ts[0].Reason, SkipNothingToBuild) || len(e.backfills()) != 0 {
			t.Fatalf("ticks:\n%s", tickSummary(ts))
		}
	})
}

// TestScheduleBurstLaunchesEachOnce: 300 schedules due at the same second
// (more than one batch) launch one backfill each, recorded with its tick in
// the same transaction; evaluating the same instant again launches nothing.
func TestScheduleBurstLaunchesEachOnce(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		if dialect == db.Postgres {
			// The race pass runs the burst's workers and committer on
			// SQLite (8 s); on PostgreSQL it took 57 s of the race pass
			// and shares every goroutine with SQLite but the driver's
			// (db's race tests run that). The plain pass runs both.
			teststore.SkipInRacePass(t)
		}
		var b strings.Builder
		for i := range 300 {
			b.WriteString("  s" + strconv.Itoa(i) + ":\n    cron: \"0 * * * *\"\n    assets: [ref.regions]\n")
		}
		e := newSchedEnvOn(t, dialect, b.String())
		e.eval(at(t, "2026-03-01 09:30:00"))
		e.eval(at(t, "2026-03-01 10:00:01"))
		e.eval(at(t, "2026-03-01 10:00:01"))
		bs := e.backfills()
		if len(bs) != 300 {
			t.Fatalf("%d backfills, want 300", len(bs))
		}
		seen := map[string]bool{}
		for _, bf := range bs {
			if bf.RequestKey == nil || seen[*bf.RequestKey] {
				t.Fatalf("backfill %s: request key %v twice or missing", bf.ID, bf.RequestKey)
			}
			seen[*bf.RequestKey] = true
		}
		for i := range 300 {
			ts := e.ticks("s" + strconv.Itoa(i))
			if len(ts) != 1 || ts[0].Outcome != db.TickLaunched || ts[0].BackfillID == nil {
				t.Fatalf("s%d ticks:\n%s", i, tickSummary(ts))
			}
		}
	})
}

// TestMissingWithinTickSkipsLeasedPartitions: a missing_within tick targets
// the missing and failed windows; two of them that a running attempt leases
// without a status row are in progress, not missing, so the tick's backfill
// leaves them out (as it would a partition whose row holds the lease).
func TestMissingWithinTickSkipsLeasedPartitions(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  recent:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n    missing_within: 6h\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		sc := e.ws.Load().Schedule("recent")
		tick := at(t, "2026-03-01 10:05:00")
		req, skip, err := e.eng.TickRequest(ctx, sc, tick)
		if err != nil || skip != "" {
			t.Fatal(err, skip)
		}
		before, err := e.eng.PreviewAt(ctx, req, tick)
		if err != nil || before.TotalPartitions < 3 || before.Status[db.StatusMissing] != before.TotalPartitions {
			t.Fatalf("preview before the lease: %v %+v, want only missing partitions", err, before)
		}
		sp := e.ws.Load().Asset("raw.events").Scheme.Space(tick, nil)
		lo, err := sp.Index(req.Selector.Start)
		if err != nil {
			t.Fatal(err)
		}
		asset := e.ids["raw.events"]
		if _, err := e.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
		VALUES ('run_a','key:a','bf_other',0,0,'raw.events',?,'f',2,'queued',3,0,0)`, asset); err != nil {
			t.Fatal(err)
		}
		start := db.AttemptsStarted{Owner: "o", At: db.Millis(tick), Attempts: []db.AttemptStart{{RunID: "run_a", BackfillID: "bf_other", Attempt: 1,
			AssetID: asset, Asset: "raw.events", Parts: []db.PartRef{{Key: sp.Key(lo), Idx: lo}, {Key: sp.Key(lo + 1), Idx: lo + 1}}}}}
		if err := e.store.Tx(ctx, func(tx *sqlx.Tx) error {
			return db.Emit(ctx, tx, db.EvAttemptsStarted, "backfill:bf_other", "controller", start, "", tick)
		}); err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := e.store.RawReader().Get(&rows, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, asset); err != nil || rows != 0 {
			t.Fatalf("%d status rows (%v), want none: the attempt's own row holds the lease", rows, err)
		}
		after, err := e.eng.PreviewAt(ctx, req, tick)
		if err != nil || after.TotalPartitions != before.TotalPartitions-2 || after.Status[db.StatusMissing] != before.TotalPartitions-2 {
			t.Fatalf("preview during the lease: %v %+v, want the %d missing partitions but the 2 leased", err, after, before.TotalPartitions-2)
		}
	})
}

// TestScheduleRunNowBetweenTicks (issue 22 audit): "Run now" on an hourly
// schedule at :05 of an hourly asset, clicked at 10:25 — after the 10:05
// tick, when no hour has closed since — builds what that tick targeted,
// the hour 09:00, rather than launching nothing ("no window closed since
// the previous tick", which it answered for 55 minutes of every hour).
// Clicked at 11:02, the hour 10:00 closed since the previous tick at
// 10:05: it builds that one, as a tick then would.
func TestScheduleRunNowBetweenTicks(t *testing.T) {
	t.Parallel()
	eachSchedEnv(t, "  hourly:\n    cron: \"5 * * * *\"\n    assets: [raw.events]\n", func(t *testing.T, e *schedEnv) {
		ctx := context.Background()
		for _, c := range []struct{ now, hour string }{
			{"2026-03-01 10:25:00", "2026-03-01-09:00"},
			{"2026-03-01 11:02:00", "2026-03-01-10:00"},
		} {
			now := at(t, c.now)
			e.eng.Now = func() time.Time { return now }
			r, err := e.sched.Trigger(ctx, "hourly", "alice")
			if err != nil || r.Tick.Outcome != db.TickLaunched || r.Backfill == nil {
				t.Fatalf("run now at %s: %+v %v", c.now, r.Tick, err)
			}
			if sel := r.Backfill.Selector; r.Backfill.TotalPartitions != 1 || !strings.Contains(sel, `"start":"`+c.hour+`"`) || !strings.Contains(sel, `"end":"`+c.hour+`"`) {
				t.Fatalf("run now at %s built %d partitions, %s; want the hour %s", c.now, r.Backfill.TotalPartitions, sel, c.hour)
			}
		}
	})
}
