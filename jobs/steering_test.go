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
)

// An asynchronous (202) attempt keeps its timeout and can be terminated: a
// remote engine that never calls back cannot leave a run running for ever.
func TestAsyncAttemptTimeoutAndTerminate(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusAccepted) // and never call back
	}))
	defer srv.Close()
	ws := fmt.Sprintf(`
assets:
  a.quick:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 1}
    executor: {http: {url: %q, timeout: 300ms}}
  a.patient:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 1}
    executor: {http: {url: %q}}
`, srv.URL, srv.URL)
	env := newTestEnv(t, ws, Options{BaseURL: "http://tessera.test"})
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

	// A graceful cancel waits for the running attempt; escalating it with
	// terminate ends the attempt even though it waits for a callback.
	b = env.create(Request{Assets: []string{"a.patient"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	waitFor(t, "two async runs running", func() bool { g, _ := env.store.Backfill(ctx, b.ID); return g.RunsRunning == 2 })
	c, err := env.eng.Transition(ctx, b.ID, ActCancel, 0, false, "t")
	if err != nil || c.State != db.BackfillCanceling {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	time.Sleep(100 * time.Millisecond)
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
}

// A backfill whose partitions another run is building plans its chunk rows
// one free slot at a time (its max_concurrent_runs), not all at once.
func TestOverlappingBackfillPlansWithinItsCap(t *testing.T) {
	g := newGate()
	sw := newSwap(g)
	env := newTestEnv(t, dailyWS, Options{Executor: sw})
	env.start()
	ctx := context.Background()
	holder := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 20, MaxConcurrentRuns: 1})
	waitFor(t, "the holder's run started", func() bool { return g.started.Load() == 1 })
	waiter := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	waitFor(t, "the waiter planned", func() bool { b, _ := env.store.Backfill(ctx, waiter.ID); return b.NextChunk > 0 })
	time.Sleep(200 * time.Millisecond) // ten ticks of the controller
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
	if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances`); n != 40 {
		t.Fatalf("%d instances, want 20 by each backfill", n)
	}
}

// A run key planned again with other partitions is recorded as a conflict
// and not run: here the asset's partition scheme changed while a chunk's
// planning was lost (the planning cursor rewound), so chunk 0 of the same
// backfill now stands for other keys.
func TestConflictRecordedForAChangedChunk(t *testing.T) {
	env := newTestEnv(t, dailyWS, Options{Executor: NoopExecutor{}})
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
	if _, err := env.store.W.Exec(`UPDATE backfills SET state='RUNNING', next_chunk=0, finished_at=NULL WHERE id=?`, b.ID); err != nil {
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
}

// Rate-limit headers slow the pool also when the answer was a success, and a
// 429 without Retry-After still pauses the pool.
func TestRateLimitHeadersOnAnyAnswerSlowThePool(t *testing.T) {
	var mode atomic.Value
	mode.Store("quota")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	env := newTestEnv(t, strings.Replace(httpAsset(srv.URL, ""), `, token_url: ""`, "", 1), Options{})
	env.start()
	slowFor := func() time.Duration {
		env.eng.pools.mu.Lock()
		defer env.eng.pools.mu.Unlock()
		return time.Until(env.eng.pools.slowTill["remote"])
	}
	b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	if f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded {
		t.Fatalf("a 200 with a spent quota is still a success: %+v", f)
	}
	if d := slowFor(); d < 2*time.Second || d > 3*time.Second {
		t.Fatalf("pool slowed for %s, want ~3s (X-RateLimit-Reset)", d)
	}
	env.eng.pools.mu.Lock()
	env.eng.pools.slowTill["remote"] = time.Time{}
	env.eng.pools.mu.Unlock()
	mode.Store("429")
	b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-02", End: "2025-01-02"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	env.wait(b.ID, db.BackfillFailed)
	if d := slowFor(); d < defaultRateLimitWait-time.Second || d > defaultRateLimitWait {
		t.Fatalf("429 without Retry-After slowed the pool for %s, want %s", d, defaultRateLimitWait)
	}
}
