package jobs

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// An asynchronous (202) attempt keeps its timeout and can be terminated: a
// remote engine that never calls back cannot leave a run running for ever.
func TestAsyncAttemptTimeoutAndTerminate(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		var posts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			posts.Add(1)
			w.WriteHeader(http.StatusAccepted) // and never call back
		}))
		defer srv.Close()
		ws := teststore.Assets(
			oneAttemptAsset("a.quick", "{daily: {start: 2025-01-01, end: 2025-02-01}}", fmt.Sprintf("{http: {url: %q, timeout: 1s}}", srv.URL)),
			oneAttemptAsset("a.patient", "{daily: {start: 2025-01-01, end: 2025-02-01}}", fmt.Sprintf("{http: {url: %q}}", srv.URL)),
		)
		env := newTestEnvOn(t, dialect, ws, Options{BaseURL: "http://tessera.test"})
		env.start()
		ctx := context.Background()

		// No callback within the http executor's timeout: the attempt times out.
		b := env.create(Request{Assets: []string{"a.quick"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		f := env.wait(b.ID, db.BackfillFailed, db.BackfillSucceeded)
		if f.State != db.BackfillFailed || f.PartitionsFailed != 1 {
			t.Fatalf("async timeout: %+v", f)
		}
		atts, err := env.store.Attempts(ctx, runIDOf(t, env, b.ID, 0))
		if err != nil || len(atts) != 1 || atts[0].State != db.AttemptTimeout || atts[0].Error == nil || !strings.Contains(*atts[0].Error, "no callback") {
			t.Fatalf("attempts %+v %v", atts, err)
		}
		if log, err := env.store.AttemptLog(ctx, atts[0].RunID, 1); err != nil || !strings.Contains(log, "202 Accepted") {
			t.Fatalf("the attempt's log should keep the remote's answer: %q %v", log, err)
		}

		// A graceful cancel waits for the running attempt; escalating it with
		// terminate ends the attempt even though it waits for a callback.
		b = env.create(Request{Assets: []string{"a.patient"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}, ChunkSize: 1, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "two async runs running", func() bool { g, _ := env.store.Backfill(ctx, b.ID); return g.RunsRunning == 2 })
		c, err := env.eng.Transition(ctx, b.ID, ActCancel, 0, false, "t")
		if err != nil || c.State != db.BackfillCanceling {
			t.Fatalf("cancel: %+v %v", c, err)
		}
		env.steps(5) // the steps that would end the runs, were the cancel not graceful
		if g, _ := env.store.Backfill(ctx, b.ID); g.State != db.BackfillCanceling || g.RunsRunning != 2 {
			t.Fatalf("a graceful cancel should wait for the runs: %+v", g)
		}
		// A second graceful cancel is refused and says what would help.
		_, err = env.eng.Transition(ctx, b.ID, ActCancel, 0, false, "t")
		inputErr(t, err, "state", true)
		if !strings.Contains(err.Error(), "terminate") {
			t.Fatalf("refusal should point at terminate: %v", err)
		}
		esc, err := env.eng.Transition(ctx, b.ID, ActCancel, c.StateVersion, true, "t")
		if err != nil || !esc.Terminate || esc.StateVersion < c.StateVersion+1 { // the controller may have moved on already
			t.Fatalf("escalate: %+v %v", esc, err)
		}
		f = env.wait(b.ID, db.BackfillCanceled)
		if f.RunsCanceled != 2 || f.PartitionsMaterialized != 0 {
			t.Fatalf("terminated: %+v", f)
		}
		atts, _ = env.store.Attempts(ctx, runIDOf(t, env, b.ID, 0))
		if len(atts) != 1 || atts[0].State != db.AttemptCanceled {
			t.Fatalf("terminated attempt %+v", atts)
		}
		// Once terminating, cancel is refused whatever it carries; so is a
		// negative expected_state_version on any transition.
		_, err = env.eng.Transition(ctx, b.ID, ActCancel, 0, true, "t")
		inputErr(t, err, "state", true)
		_, err = env.eng.Transition(ctx, b.ID, ActPause, -1, false, "t")
		inputErr(t, err, "expected_state_version", false)
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_status WHERE status='in_progress'`); n != 0 {
			t.Fatalf("%d partitions left in progress", n)
		}
	})
}

// A backfill whose partitions another run is building plans its chunk rows
// one free slot at a time (its max_concurrent_runs), not all at once.
func TestOverlappingBackfillPlansWithinItsCap(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		g := newGate()
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: g})
		env.start()
		ctx := context.Background()
		holder := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 20, MaxConcurrentRuns: 1})
		poll.Eventually(t, 20*time.Second, "the holder's run started", func() bool { return g.started.Load() == 1 })
		waiter := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 1, MaxConcurrentRuns: 2})
		poll.Eventually(t, 20*time.Second, "the waiter planned", func() bool { b, _ := env.store.Backfill(ctx, waiter.ID); return b.NextChunk > 0 })
		env.steps(10) // ten steps of the controller, any of which would plan more were the cap not kept
		w, _ := env.store.Backfill(ctx, waiter.ID)
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM runs WHERE backfill_id=?`, waiter.ID); n != 2 || w.NextChunk != 2 || w.RunsRunning != 0 {
			t.Fatalf("waiting backfill planned %d runs (next chunk %d, running %d), want 2 waiting", n, w.NextChunk, w.RunsRunning)
		}
		g.open()
		for _, id := range []string{holder.ID, waiter.ID} {
			if f := env.wait(id, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded {
				t.Fatalf("backfill %+v", f)
			}
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all`); n != 40 {
			t.Fatalf("%d instances, want 20 by each backfill", n)
		}
	})
}

// A run key planned again with other partitions is recorded as a conflict
// and not run: here the asset's partition scheme changed while a chunk's
// planning was lost (the planning cursor rewound), so chunk 0 of the same
// backfill now stands for other keys.
func TestConflictRecordedForAChangedChunk(t *testing.T) {
	t.Parallel()
	eachTestEnv(t, dailyWS, Options{Executor: NoopExecutor{}}, func(t *testing.T, env *testEnv) {
		env.start()
		ctx := context.Background()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-04"}, ChunkSize: 2, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillSucceeded)
		env.stop()
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM conflicts`); n != 0 {
			t.Fatalf("%d conflicts before", n)
		}
		// The same selection, by index, now means other days.
		shifted, err := catalog.ParseWorkspace("t.yaml", []byte(strings.Replace(dailyWS, "start: 2025-01-01", "start: 2024-12-01", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := env.store.SyncWorkspace(ctx, shifted, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := env.store.RawWriter().Exec(`UPDATE backfills SET state='RUNNING', next_chunk=0, finished_at=NULL WHERE id=?`, b.ID); err != nil {
			t.Fatal(err)
		}
		env.ws = shifted
		env.eng.ws = func() (*catalog.Workspace, map[string]int64) { return shifted, env.ids }
		env.start()
		env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
		cs, err := env.store.Conflicts(ctx, 10)
		if err != nil || len(cs) != 2 {
			t.Fatalf("conflicts %+v %v, want one per chunk", cs, err)
		}
		for _, c := range cs {
			if c.BackfillID != b.ID || c.ExistingFingerprint == c.RequestedFingerprint || !strings.HasPrefix(c.RunKey, "backfill:"+b.ID+":chunk:") {
				t.Fatalf("conflict %+v", c)
			}
		}
		// Conflicting chunks were not run again.
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM runs WHERE backfill_id=?`, b.ID); n != 2 {
			t.Fatalf("%d runs, want the 2 planned before", n)
		}
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM events WHERE type=?`, db.EvConflict); n != 2 {
			t.Fatalf("%d conflict events", n)
		}
	})
}

// Rate-limit headers slow the pool also when the answer was a success, and a
// 429 without Retry-After still pauses the pool.
func TestRateLimitHeadersOnAnyAnswerSlowThePool(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		var mode, answered atomic.Value
		mode.Store("quota")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			answered.Store(time.Now()) // before answering: the slow-down counts from the answer, not from when the test looks
			switch mode.Load().(string) {
			case "quota":
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset", "3")
				w.WriteHeader(http.StatusOK)
			case "429":
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}))
		defer srv.Close()
		env := newTestEnvOn(t, dialect, strings.Replace(httpAsset(srv.URL, ""), `, token_url: ""`, "", 1), Options{})
		env.start()
		// The pool stays slowed for want after the service's answer: from
		// the answer on, and from when the engine took it, which is before
		// the test saw the backfill end (seen; under make test's race pass
		// the engine took the answer up to 1.5 s after it was given).
		checkSlowed := func(want time.Duration, seen time.Time, what string) {
			t.Helper()
			env.eng.pools.mu.Lock()
			till := env.eng.pools.slowTill["remote"]
			env.eng.pools.mu.Unlock()
			from := answered.Load().(time.Time)
			if till.Before(from.Add(want-100*time.Millisecond)) || till.After(seen.Add(want+100*time.Millisecond)) {
				t.Fatalf("%s slowed the pool until %s after the answer (the backfill seen ended %s after it), want %s", what,
					till.Sub(from), seen.Sub(from), want)
			}
		}
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		if f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded {
			t.Fatalf("a 200 with a spent quota is still a success: %+v", f)
		}
		checkSlowed(3*time.Second, time.Now(), "a 200 with X-RateLimit-Reset: 3")
		env.eng.pools.mu.Lock()
		env.eng.pools.slowTill["remote"] = time.Time{}
		env.eng.pools.mu.Unlock()
		mode.Store("429")
		b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-02", End: "2025-01-02"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillFailed)
		checkSlowed(defaultRateLimitWait, time.Now(), "a 429 without Retry-After")
	})
}

// The preview's estimate uses the asset's recent runs and the concurrency
// the backfill will really get (its cap, the pool's cap, the throttle), and
// says which assets have no history.
func TestPreviewEstimateFromHistoryAndCaps(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ws := `pools:
  narrow: {max_concurrent_runs: 2}
  metered: {max_concurrent_runs: 10, throttle: 4/1s}
` + teststore.Assets(
			teststore.Asset("e.narrow", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "pool: narrow"),
			teststore.Asset("e.metered", "{daily: {start: 2025-01-01, end: 2025-04-01}}", "pool: metered"),
			teststore.Asset("e.fresh", "{daily: {start: 2025-01-01, end: 2025-04-01}}"),
			teststore.Asset("e.reported", "{daily: {start: 2025-01-01, end: 2025-04-01}}"),
		)
		env := newTestEnvOn(t, dialect, ws, Options{Executor: NoopExecutor{}})
		ctx := context.Background()
		// History: attempts of 4 partitions that took 400 ms, i.e. 100 ms a partition.
		for i, asset := range []string{"e.narrow", "e.metered"} {
			run := "run_hist_" + asset
			if _, err := env.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
			VALUES (?, ?, 'bf_hist', ?, 0, ?, ?, 'fp', 4, 'succeeded', 1, 0, 0)`, run, "hist:"+asset, i, asset, env.ids[asset]); err != nil {
				t.Fatal(err)
			}
			if _, err := env.store.RawWriter().Exec(`INSERT INTO attempts (run_id, attempt, state, owner, partitions, started_at, finished_at) VALUES (?, 1, 'succeeded', 'o', 4, 1000, 1400)`, run); err != nil {
				t.Fatal(err)
			}
		}
		preview := func(asset string, chunk, conc int64) *Preview {
			t.Helper()
			pv, err := env.eng.Preview(ctx, Request{Assets: []string{asset}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: chunk, MaxConcurrentRuns: conc})
			if err != nil || pv.EstimateSeconds == nil {
				t.Fatalf("preview of %s: %+v %v", asset, pv, err)
			}
			return pv
		}
		// 20 partitions × 100 ms over min(8 asked, 2 in the pool) runs = 1 s.
		if pv := preview("e.narrow", 1, 8); *pv.EstimateSeconds != 1 {
			t.Fatalf("pool cap: %v", *pv.EstimateSeconds)
		}
		// 20 partitions × 100 ms over 10 runs = 0.2 s of work, but the throttle
		// lets 4 start at once and 4 a second after: 16 more runs take 4 s.
		if pv := preview("e.metered", 1, 10); *pv.EstimateSeconds != 4 {
			t.Fatalf("throttle: %v", *pv.EstimateSeconds)
		}
		// Two chunks of 10 on two runs: 10 × 100 ms.
		if pv := preview("e.narrow", 10, 2); *pv.EstimateSeconds != 1 {
			t.Fatalf("two chunks: %v", *pv.EstimateSeconds)
		}
		pv, err := env.eng.Preview(ctx, Request{Assets: []string{"e.narrow", "e.fresh"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-04"}, ChunkSize: 4, MaxConcurrentRuns: 2})
		if err != nil || pv.EstimateSeconds == nil || *pv.EstimateSeconds != 0.4 || fmt.Sprint(pv.Basis.NoHistory) != "[e.fresh]" || len(pv.Basis.FromReports) != 0 || pv.Basis.Assets != 2 {
			t.Fatalf("partial history: %+v %v", pv, err)
		}
		// No run, but a pipeline reported materializations that took 300 ms each
		// (a report without a start says nothing about duration and is ignored).
		now := time.Now()
		ms := []db.Materialization{{AssetID: env.ids["e.reported"], AssetKey: "e.reported", Partition: "2025-03-01", Idx: 59, Status: db.StatusMaterialized, RunID: "ext", At: now}}
		for d := 1; d <= 3; d++ {
			ms = append(ms, db.Materialization{AssetID: env.ids["e.reported"], AssetKey: "e.reported", Partition: fmt.Sprintf("2025-02-%02d", d), Idx: int64(30 + d),
				Status: db.StatusMaterialized, RunID: "ext", StartedAt: now.Add(-300 * time.Millisecond), At: now})
		}
		if _, err := env.store.RecordMaterializations(ctx, ms, "test", "", now); err != nil {
			t.Fatal(err)
		}
		// 20 partitions × 300 ms over 2 runs = 3 s.
		if pv := preview("e.reported", 1, 2); *pv.EstimateSeconds != 3 || fmt.Sprint(pv.Basis.FromReports) != "[e.reported]" || len(pv.Basis.NoHistory) != 0 {
			t.Fatalf("from reports: %v %+v", *pv.EstimateSeconds, pv.Basis)
		}
		pv, err = env.eng.Preview(ctx, Request{Assets: []string{"e.narrow", "e.reported"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-04"}, ChunkSize: 4, MaxConcurrentRuns: 2})
		if err != nil || pv.EstimateSeconds == nil || fmt.Sprint(pv.Basis.FromReports) != "[e.reported]" || pv.Basis.Assets != 2 {
			t.Fatalf("runs and reports: %+v %v", pv, err)
		}
	})
}
