package jobs

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

func TestRetriesWithBackoffKeepCheckpoint(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ws := teststore.Assets(
			teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 3, backoff: 10ms}"),
		)
		var mu sync.Mutex
		calls := map[string]int{}
		var seen [][]string
		ex := funcExec(func(ctx context.Context, w Work) Result {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, w.Partitions)
			return partsResult(w, "flaky", func(p string) (string, bool) {
				calls[p]++
				return "", p == "2025-01-03" && calls[p] < 3
			})
		})
		env := newTestEnvOn(t, dialect, ws, Options{Executor: ex})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, ChunkSize: 5, MaxConcurrentRuns: 1})
		f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
		if f.State != db.BackfillSucceeded || len(seen) != 3 {
			t.Fatalf("final %+v after %d attempts", f, len(seen))
		}
		// Attempts 2 and 3 only rebuilt the partition that failed.
		if len(seen[1]) != 1 || seen[1][0] != "2025-01-03" || calls["2025-01-01"] != 1 {
			t.Fatalf("retries rebuilt materialized partitions: %v", seen)
		}
		atts, _ := env.store.Attempts(context.Background(), runIDOf(t, env, b.ID, 0))
		if len(atts) != 3 || atts[0].State != db.AttemptFailed || atts[2].State != db.AttemptSucceeded {
			t.Fatalf("attempts %+v", atts)
		}
		// The run's partitions: each with the attempt that built it.
		run, err := env.store.Run(context.Background(), runIDOf(t, env, b.ID, 0))
		if err != nil {
			t.Fatal(err)
		}
		outs, total, err := env.eng.RunPartitions(context.Background(), run, 10)
		if err != nil || total != 5 || len(outs) != 5 {
			t.Fatalf("run partitions %+v %d %v", outs, total, err)
		}
		for _, o := range outs {
			want := int64(1)
			if o.Partition == "2025-01-03" {
				want = 3
			}
			if o.Status != db.StatusMaterialized || o.Attempt != want {
				t.Errorf("%s: %+v, want materialized by attempt %d", o.Partition, o, want)
			}
		}
	})
}

func runIDOf(t *testing.T, env *testEnv, backfill string, chunk int64) string {
	t.Helper()
	runs, err := env.store.Runs(context.Background(), backfill, nil, chunk-1, 1)
	if err != nil || len(runs) == 0 {
		t.Fatalf("run of chunk %d: %v", chunk, err)
	}
	return runs[0].ID
}

// TestRetryCheckpointAfterOthersChangedPartitions: between two attempts of a
// run, a pipeline outside Tessera reports two of its partitions and a user
// taints one the first attempt built. The retry builds only the partition
// that failed and the tainted one (not what was reported since the run
// started), and the run and backfill count each partition once.
func TestRetryCheckpointAfterOthersChangedPartitions(t *testing.T) {
	t.Parallel()
	r := newRetryWaiting(t, false)
	env, b, runID := r.env, r.b, r.runID
	ctx := context.Background()
	id := env.ids["a.daily"]
	reportExternal(t, env, "external-1", "2025-01-01", "2025-01-02")
	if err := env.store.Taint(ctx, id, "a.daily", "2025-01-04", "bad rows", "admin", time.Now()); err != nil {
		t.Fatal(err)
	}
	r.resume()
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	seen := r.calls()
	if f.State != db.BackfillSucceeded || len(seen) != 2 {
		t.Fatalf("final %+v after attempts %v", f, seen)
	}
	if got := strings.Join(seen[1], ","); got != "2025-01-03,2025-01-04" {
		t.Errorf("the retry built %s, want the failed and the tainted partition (2025-01-03,2025-01-04)", got)
	}
	run, err := env.store.Run(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Materialized != 5 || f.PartitionsMaterialized != 5 || f.TotalPartitions != 5 {
		t.Errorf("run materialized %d, backfill %d of %d: each partition must count once", run.Materialized, f.PartitionsMaterialized, f.TotalPartitions)
	}
	p, err := env.store.Partition(ctx, id, "2025-01-04")
	if err != nil || p.TaintedAt != nil || p.Status != db.StatusMaterialized {
		t.Errorf("tainted partition after the retry: %+v %v", p, err)
	}
}

func dayIdx(t *testing.T, day string) int64 {
	t.Helper()
	d, err := time.Parse("2006-01-02", day)
	if err != nil {
		t.Fatal(err)
	}
	return int64(d.Sub(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) / (24 * time.Hour))
}

// TestCancelCountsFailuresOfRunsWaitingForRetry: a run waiting out its
// retry backoff when the backfill is canceled never retries; the partitions
// its attempt failed count as failed, and retry-failed takes them — whether
// the cancel ends the backfill at once or, after a running chunk finished,
// the controller does.
func TestCancelCountsFailuresOfRunsWaitingForRetry(t *testing.T) {
	t.Parallel()
	ws := teststore.Assets(
		teststore.Asset("c.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 3, backoff: 1h}"),
	)
	for _, whileRunning := range []bool{false, true} {
		release := make(chan struct{})
		ex := funcExec(func(ctx context.Context, w Work) Result {
			return partsResult(w, "1 failed", func(p string) (string, bool) {
				if p == "2025-01-03" {
					<-release // the second chunk runs until released
				}
				return "bad input file", p == "2025-01-02"
			})
		})
		env := newTestEnv(t, ws, Options{Executor: ex})
		env.start()
		ctx := context.Background()
		b := env.create(Request{Assets: []string{"c.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-04"}, ChunkSize: 2, MaxConcurrentRuns: 2})
		// Wait for chunk 0 to be queued for its retry (and chunk 1 to run).
		poll.Eventually(t, 10*time.Second, "chunk 0 to wait for its retry while chunk 1 runs", func() bool {
			runs, err := env.store.Runs(ctx, b.ID, nil, -1, 2)
			if err != nil {
				t.Fatal(err)
			}
			return len(runs) == 2 && runs[0].State == db.RunQueued && runs[0].Attempts == 1 && runs[1].State == db.RunRunning
		})
		if !whileRunning {
			close(release)
			poll.Eventually(t, 10*time.Second, "chunk 1 to finish", func() bool { bf, _ := env.store.Backfill(ctx, b.ID); return bf.RunsRunning == 0 })
		}
		if _, err := env.eng.Transition(ctx, b.ID, ActCancel, 0, false, "t"); err != nil {
			t.Fatal(err)
		}
		if whileRunning {
			close(release)
		}
		f := env.wait(b.ID, db.BackfillCanceled)
		if f.PartitionsFailed != 1 || f.PartitionsMaterialized != 3 {
			t.Errorf("whileRunning=%v: canceled backfill counts %d failed, %d materialized; want 1 and 3", whileRunning, f.PartitionsFailed, f.PartitionsMaterialized)
		}
		child, err := env.eng.RetryFailed(ctx, b.ID, RetryOptions{RequestID: "after-cancel"}, "t")
		if err != nil || child.Backfill.TotalPartitions != 1 {
			t.Fatalf("whileRunning=%v: retry-failed after cancel: %+v %v", whileRunning, child.Backfill, err)
		}
		env.stop()
	}
}

// An attempt whose report fails partitions without an error says how many of
// the partitions it built failed; a retry, which builds only what earlier
// attempts left, also says what became of the rest of the chunk.
func TestAttemptErrorCountsWhatTheAttemptBuilt(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ws := teststore.Assets(
			teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 2, backoff: 10ms}"),
		)
		ex := funcExec(func(ctx context.Context, w Work) Result {
			return partsResult(w, "", func(p string) (string, bool) { return "", p == "2025-01-03" })
		})
		env := newTestEnvOn(t, dialect, ws, Options{Executor: ex})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, ChunkSize: 5, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillFailed)
		atts, _ := env.store.Attempts(context.Background(), runIDOf(t, env, b.ID, 0))
		if len(atts) != 2 || atts[0].Error == nil || atts[1].Error == nil {
			t.Fatalf("attempts %+v", atts)
		}
		if got := *atts[0].Error; got != "1 of 5 partitions failed" {
			t.Errorf("attempt 1: %q", got)
		}
		if got := *atts[1].Error; got != "1 of 1 partition failed in this attempt; the chunk's other 4 were built earlier or skipped" {
			t.Errorf("attempt 2: %q", got)
		}
	})
}

// A retry child's title names its parent by its name (its title, or its
// assets when untitled), never by its id ("Retry failed of bf_01m…"), cut
// to 200 characters without splitting a character.
func TestRetryTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300)
	for _, tc := range []struct{ title, assets, want string }{
		{"", `["raw.events"]`, "Retry failed: Backfill of raw.events"},
		{"  ", `["a","b","c","d"]`, "Retry failed: Backfill of a, b and 2 more assets"},
		{"EU catch-up", `["raw.events"]`, "Retry failed: EU catch-up"},
		{long, `["raw.events"]`, "Retry failed: " + strings.Repeat("é", 200-len([]rune("Retry failed: ")))},
	} {
		got := retryTitle(db.Backfill{ID: "bf_1", Title: tc.title, Assets: tc.assets}.Name())
		if got != tc.want || !utf8.ValidString(got) || strings.Contains(got, "bf_1") {
			t.Errorf("retryTitle(%q) = %q, want %q", tc.title, got, tc.want)
		}
	}
}

// TestRetrySkipsPartitionBuiltMeanwhile: the partition a run failed is
// materialized by someone else while the run waits for its retry. The retry
// does not build it again, and it counts as materialized: the backfill ends
// SUCCEEDED with nothing pending, and the run says who built it.
func TestRetrySkipsPartitionBuiltMeanwhile(t *testing.T) {
	t.Parallel()
	r := newRetryWaiting(t, true)
	env, b, runID := r.env, r.b, r.runID
	ctx := context.Background()
	reportExternal(t, env, "external-7", "2025-01-03")
	r.resume()
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	seen := r.calls()
	if f.State != db.BackfillSucceeded || len(seen) != 1 {
		t.Fatalf("final %s after executor calls %v; want SUCCEEDED without building again", f.State, seen)
	}
	run, err := env.store.Run(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Materialized != 5 || f.PartitionsMaterialized != 5 || f.PartitionsFailed != 0 {
		t.Errorf("run materialized %d, backfill materialized %d failed %d of %d: the partition built meanwhile must count as materialized",
			run.Materialized, f.PartitionsMaterialized, f.PartitionsFailed, f.TotalPartitions)
	}
	outs, _, err := env.eng.RunPartitions(ctx, run, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Partition == "2025-01-03" && (o.Status != db.StatusMaterialized || o.BuiltBy != "external-7" || o.Error != "") {
			t.Errorf("the partition built meanwhile reads %+v, want materialized, built by external-7", o)
		}
	}
}

// reportExternal records the partitions of a.daily as materialized by run,
// a pipeline outside Tessera reporting through the API.
func reportExternal(t *testing.T, env *testEnv, run string, partitions ...string) {
	t.Helper()
	var items []db.Materialization
	for _, p := range partitions {
		items = append(items, db.Materialization{AssetID: env.ids["a.daily"], AssetKey: "a.daily", Partition: p, Idx: dayIdx(t, p), Status: db.StatusMaterialized,
			RunID: run, Source: "api", At: time.Now()})
	}
	if _, err := env.store.RecordMaterializations(context.Background(), items, "pipeline", "", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// waitRetryQueued waits until the only run of backfill id has recorded its
// first attempt and waits for its retry's backoff, and returns its id.
func waitRetryQueued(t *testing.T, env *testEnv, id string) string {
	t.Helper()
	var runs []db.Run
	poll.Eventually(t, 10*time.Second, "attempt 1 to be recorded and its run queued for the retry", func() bool {
		var err error
		if runs, err = env.store.Runs(context.Background(), id, nil, -1, 1); err != nil {
			t.Fatal(err)
		}
		return len(runs) == 1 && runs[0].Attempts == 1 && runs[0].State == db.RunQueued
	})
	return runs[0].ID
}

// TestFailedRunKeepsItsOutcomeAfterRetry: the partitions of a failed run,
// rebuilt later by a Retry failed, still read failed with their error on
// that run (what the run did), not materialized "built by" the retry, as if
// they had been built while it ran. Before, the run's header said "0
// materialized · 2 failed" above a list of materialized partitions (found
// by the UI audit).
func TestFailedRunKeepsItsOutcomeAfterRetry(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		var mu sync.Mutex
		calls := 0
		ex := funcExec(func(ctx context.Context, w Work) Result {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			return partsResult(w, "disk full", func(string) (string, bool) { return "disk full", first })
		})
		env := newTestEnvOn(t, dialect, dailyWS, Options{Executor: ex})
		env.start()
		ctx := context.Background()
		parent := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}, ChunkSize: 2, MaxConcurrentRuns: 1})
		env.wait(parent.ID, db.BackfillFailed)
		child, err := env.eng.RetryFailed(ctx, parent.ID, RetryOptions{}, "test")
		if err != nil {
			t.Fatal(err)
		}
		env.wait(child.Backfill.ID, db.BackfillSucceeded)
		runs, err := env.store.Runs(ctx, parent.ID, nil, -1, 10)
		if err != nil || len(runs) != 1 {
			t.Fatalf("parent runs %+v %v", runs, err)
		}
		parts, _, err := env.eng.RunPartitions(ctx, runs[0], 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if p.Status != db.StatusFailed || p.Error != "disk full" || p.BuiltBy != "" {
				t.Errorf("the failed run's partition after the retry: %+v, want failed with its error", p)
			}
		}
	})
}

// retryWaiting is a backfill of a.daily 2025-01-01..05 in one chunk whose
// run failed 2025-01-03 and waits for its retry, the backfill paused by the
// first call of the executor (so that what a test changes before resume is
// there when the retry starts: with a 1 s backoff and no pause, make test's
// race pass once started the retry before the test's taint). Its executor
// fails 2025-01-03 on the first call, or on every call with always, and
// records the partitions of each call.
type retryWaiting struct {
	t     *testing.T
	env   *testEnv
	b     db.Backfill
	runID string
	mu    sync.Mutex
	seen  [][]string
}

func newRetryWaiting(t *testing.T, always bool) *retryWaiting {
	t.Helper()
	ws := teststore.Assets(
		teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 3, backoff: 10ms}"),
	)
	r := &retryWaiting{t: t}
	ex := funcExec(func(ctx context.Context, w Work) Result {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, w.Partitions)
		if len(r.seen) == 1 {
			if _, err := r.env.eng.Transition(context.Background(), w.BackfillID, ActPause, 0, false, "t"); err != nil {
				t.Errorf("pause: %v", err)
			}
		}
		return partsResult(w, "flaky", func(p string) (string, bool) { return "flaky", p == "2025-01-03" && (always || len(r.seen) == 1) })
	})
	r.env = newTestEnv(t, ws, Options{Executor: ex})
	r.env.start()
	r.b = r.env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, ChunkSize: 5, MaxConcurrentRuns: 1})
	r.runID = waitRetryQueued(t, r.env, r.b.ID)
	return r
}

// resume resumes the backfill: its retry starts.
func (r *retryWaiting) resume() {
	r.t.Helper()
	if _, err := r.env.eng.Transition(context.Background(), r.b.ID, ActResume, 0, false, "t"); err != nil {
		r.t.Fatal(err)
	}
}

// calls returns the partitions of each executor call so far.
func (r *retryWaiting) calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.seen...)
}
