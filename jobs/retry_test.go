package jobs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
)

func TestDependenciesUpstreamFailedAndRetryFailed(t *testing.T) {
	t.Parallel()
	failHour := "2025-01-01-05:00"
	var failing atomic.Bool
	failing.Store(true)
	ex := funcExec(func(ctx context.Context, w Work) Result {
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			if failing.Load() && p == failHour {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "boom"}
				res.Err = errors.New("one partition failed")
			} else {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
			}
		}
		return res
	})
	sw := newSwap(ex)
	env := newTestEnv(t, multiWS, Options{Executor: sw})
	env.start()
	ctx := context.Background()
	b := env.create(Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 6, MaxConcurrentRuns: 4})
	f := env.wait(b.ID, db.BackfillFailed, db.BackfillSucceeded)
	if f.State != db.BackfillFailed || f.PartitionsFailed != 1 || f.PartitionsUpstreamFailed != 1 || f.PartitionsMaterialized != 47+1 {
		t.Fatalf("final %+v", f)
	}
	// The downstream day that reads the failed hour was not attempted.
	downID := env.ids["down.daily"]
	if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances WHERE asset_id=? AND partition_key='2025-01-01'`, downID); n != 0 {
		t.Fatalf("the upstream-failed day was attempted %d times", n)
	}
	// Each run lists its partitions with what it did to them.
	runOf := func(asset, key string) db.Run {
		t.Helper()
		var id string
		if err := env.store.R.Get(&id, `SELECT id FROM runs WHERE backfill_id=? AND asset=? AND first_key<=? AND last_key>=?`, b.ID, asset, key, key); err != nil {
			t.Fatalf("run of %s %s: %v", asset, key, err)
		}
		r, err := env.store.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	upRun := runOf("up.hourly", failHour)
	outs, total, err := env.eng.RunPartitions(ctx, upRun, 100)
	if err != nil || total != 6 || len(outs) != 6 {
		t.Fatalf("up run partitions %+v %d %v", outs, total, err)
	}
	for i, o := range outs {
		want := PartitionOutcome{Partition: fmt.Sprintf("2025-01-01-%02d:00", i), Status: db.StatusMaterialized, Attempt: 1}
		if o.Partition == failHour {
			want.Status, want.Error = db.StatusFailed, "boom"
		}
		if o != want {
			t.Errorf("up run partition %d: %+v, want %+v", i, o, want)
		}
	}
	downRun := runOf("down.daily", "2025-01-01")
	if downRun.State != db.RunFailed || downRun.Error == nil || *downRun.Error != "1 partition not built: an upstream partition failed" {
		t.Fatalf("down run %s: %v", downRun.State, downRun.Error)
	}
	outs, total, err = env.eng.RunPartitions(ctx, downRun, 1)
	if err != nil || total != downRun.Partitions || len(outs) != 1 || outs[0] != (PartitionOutcome{Partition: "2025-01-01", Status: "upstream_failed",
		Error: "not attempted: upstream up.hourly 2025-01-01-05:00 failed; Retry failed rebuilds both"}) {
		t.Fatalf("down run partitions %+v %d %v", outs, total, err)
	}
	// Downstream started only after every upstream run finished.
	if n := countRows(t, env.store, `SELECT COUNT(*) FROM runs d JOIN runs u ON u.backfill_id = d.backfill_id
		WHERE d.backfill_id=? AND d.asset='down.daily' AND u.asset='up.hourly' AND d.started_at < u.finished_at`, b.ID); n != 0 {
		t.Fatalf("%d downstream runs started before an upstream run finished", n)
	}
	// Retry-failed is refused while running, and idempotent on its request id.
	failing.Store(false)
	c1, err := env.eng.RetryFailed(ctx, b.ID, RetryOptions{RequestID: "r1"}, "t")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := env.eng.RetryFailed(ctx, b.ID, RetryOptions{RequestID: "r1"}, "t")
	if err != nil || !c2.Replayed || c2.Backfill.ID != c1.Backfill.ID {
		t.Fatalf("retry replay %+v %v", c2, err)
	}
	if c1.Backfill.TotalPartitions != 2 || c1.Backfill.ParentBackfillID == nil || *c1.Backfill.ParentBackfillID != b.ID {
		t.Fatalf("child %+v", c1.Backfill)
	}
	child := env.wait(c1.Backfill.ID, db.BackfillSucceeded, db.BackfillFailed)
	if child.State != db.BackfillSucceeded || child.PartitionsMaterialized != 2 {
		t.Fatalf("child final %+v", child)
	}
	if _, err := env.eng.RetryFailed(ctx, child.ID, RetryOptions{RequestID: "r2"}, "t"); err == nil {
		t.Fatal("retry-failed of a backfill without failures")
	}
	// Not allowed while running.
	g := newGate()
	sw.set(g)
	run := env.create(Request{Assets: []string{"up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 48, MaxConcurrentRuns: 1})
	env.wait(run.ID, db.BackfillRunning)
	_, err = env.eng.RetryFailed(ctx, run.ID, RetryOptions{RequestID: "r3"}, "t")
	inputErr(t, err, "state", true)
	g.open()
	env.wait(run.ID, db.BackfillSucceeded)
}

func TestRetriesWithBackoffKeepCheckpoint(t *testing.T) {
	t.Parallel()
	const ws = `
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 3, backoff: 10ms}
    executor: {demo: {duration: 1ms}}
`
	var mu sync.Mutex
	calls := map[string]int{}
	var seen [][]string
	ex := funcExec(func(ctx context.Context, w Work) Result {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, w.Partitions)
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			calls[p]++
			if p == "2025-01-03" && calls[p] < 3 {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed}
				res.Err = errors.New("flaky")
			} else {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
			}
		}
		return res
	})
	env := newTestEnv(t, ws, Options{Executor: ex})
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
}

func runIDOf(t *testing.T, env *testEnv, backfill string, chunk int64) string {
	t.Helper()
	runs, err := env.store.Runs(context.Background(), backfill, nil, chunk-1, 1)
	if err != nil || len(runs) == 0 {
		t.Fatalf("run of chunk %d: %v", chunk, err)
	}
	return runs[0].ID
}

// TestReplayRebuildsProjections runs a long mixed scenario (successes,
// failures, retries, upstream failures, pause, cancel, terminate, retry-failed,
// overlapping backfills) and rebuilds every projection from the events.
func TestReplayRebuildsProjections(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ex := funcExec(func(ctx context.Context, w Work) Result {
		n := int(calls.Add(1))
		res := Result{Parts: map[string]PartResult{}}
		for i, p := range w.Partitions {
			if (len(p)+i+n)%7 == 0 {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "x"}
				res.Err = errors.New("some failed")
			} else {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized, Metadata: []byte(`{"rows":3}`)}
			}
		}
		return res
	})
	sw := newSwap(ex)
	env := newTestEnv(t, multiWS, Options{Executor: sw})
	env.start()
	ctx := context.Background()
	a := env.create(Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 5, MaxConcurrentRuns: 3})
	b := env.create(Request{Assets: []string{"feat"}, Selector: Selector{Type: "filter", Dimensions: map[string][]string{"region": {"eu", "us"}}}, ChunkSize: 3, MaxConcurrentRuns: 2})
	c := env.create(Request{Assets: []string{"up.hourly"}, Selector: Selector{Type: "explicit", Keys: []string{"2025-01-01-01:00", "2025-01-02-03:00"}}, ChunkSize: 1, MaxConcurrentRuns: 2})
	for _, id := range []string{a.ID, b.ID, c.ID} {
		env.wait(id, db.BackfillSucceeded, db.BackfillFailed)
	}
	if r, err := env.eng.RetryFailed(ctx, a.ID, RetryOptions{RequestID: "again"}, "t"); err == nil {
		env.wait(r.Backfill.ID, db.BackfillSucceeded, db.BackfillFailed)
	}
	g := newGate()
	sw.set(g)
	d := env.create(Request{Assets: []string{"feat"}, Selector: Selector{Type: "range"}, ChunkSize: 2, MaxConcurrentRuns: 2})
	poll.Eventually(t, 20*time.Second, "gate", func() bool { return g.started.Load() >= 2 })
	if _, err := env.eng.Transition(ctx, d.ID, ActPause, 0, false, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.eng.Transition(ctx, d.ID, ActResume, 0, false, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.eng.Transition(ctx, d.ID, ActCancel, 0, true, "t"); err != nil {
		t.Fatal(err)
	}
	env.wait(d.ID, db.BackfillCanceled)
	env.stop()

	rebuilt, err := env.store.Rebuild(ctx, filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	diffs, err := db.CompareProjections(ctx, env.store, rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	// Attempt events carry no instance id per partition: applying one
	// derives the ids from its attempt, and they are the ids the engine
	// and the run pages use.
	if n := countRows(t, env.store, `SELECT COUNT(*) FROM events WHERE type IN ('attempts.started', 'attempts.finished') AND payload LIKE '%"id":"pi_%'`); n != 0 {
		t.Errorf("%d attempt events carry instance ids", n)
	}
	var insts []struct {
		ID       string `db:"id"`
		Key      string `db:"partition_key"`
		Run      string `db:"run_id"`
		Asset    string `db:"asset"`
		Attempts int64  `db:"attempts"`
	}
	if err := env.store.R.SelectContext(ctx, &insts, `SELECT i.id, i.partition_key, i.run_id, r.asset, r.attempts FROM partition_instances i JOIN runs r ON r.id = i.run_id`); err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		found := false
		for n := int64(1); n <= in.Attempts && !found; n++ {
			found = db.AttemptInstanceIDs(in.Run, n, in.Asset)(in.Key) == in.ID
		}
		if !found {
			t.Errorf("instance %s of %s %s is no attempt's derived id", in.ID, in.Run, in.Key)
		}
	}
	if len(insts) < 50 {
		t.Fatalf("only %d backfill instances", len(insts))
	}
	if n := countRows(t, env.store, `SELECT COUNT(*) FROM attempts`); n < 20 {
		t.Fatalf("scenario too small: %d attempts", n)
	}
}

// TestRetryCheckpointAfterOthersChangedPartitions: between two attempts of a
// run, a pipeline outside Tessera reports two of its partitions and a user
// taints one the first attempt built. The retry builds only the partition
// that failed and the tainted one (not what was reported since the run
// started), and the run and backfill count each partition once.
func TestRetryCheckpointAfterOthersChangedPartitions(t *testing.T) {
	t.Parallel()
	const ws = `
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 3, backoff: 1s}
    executor: {demo: {duration: 1ms}}
`
	var mu sync.Mutex
	var seen [][]string
	ex := funcExec(func(ctx context.Context, w Work) Result {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, w.Partitions)
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			if p == "2025-01-03" && len(seen) == 1 {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "flaky"}
				res.Err = errors.New("flaky")
				continue
			}
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
		}
		return res
	})
	env := newTestEnv(t, ws, Options{Executor: ex})
	env.start()
	ctx := context.Background()
	b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, ChunkSize: 5, MaxConcurrentRuns: 1})
	runID := waitRetryQueued(t, env, b.ID)
	id := env.ids["a.daily"]
	var items []db.Materialization
	for _, p := range []string{"2025-01-01", "2025-01-02"} {
		items = append(items, db.Materialization{AssetID: id, AssetKey: "a.daily", Partition: p, Idx: dayIdx(t, p), Status: db.StatusMaterialized,
			RunID: "external-1", Source: "api", At: time.Now()})
	}
	if _, err := env.store.RecordMaterializations(ctx, items, "pipeline", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := env.store.Taint(ctx, id, "a.daily", "2025-01-04", "bad rows", "admin", time.Now()); err != nil {
		t.Fatal(err)
	}
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	mu.Lock()
	defer mu.Unlock()
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
	const ws = `
assets:
  c.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 3, backoff: 1h}
    executor: {demo: {duration: 1ms}}
`
	for _, whileRunning := range []bool{false, true} {
		release := make(chan struct{})
		ex := funcExec(func(ctx context.Context, w Work) Result {
			res := Result{Parts: map[string]PartResult{}}
			for _, p := range w.Partitions {
				switch p {
				case "2025-01-02":
					res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "bad input file"}
					res.Err = errors.New("1 failed")
				case "2025-01-03":
					<-release // the second chunk runs until released
					res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
				default:
					res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
				}
			}
			return res
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
	const ws = `
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 2, backoff: 10ms}
    executor: {demo: {duration: 1ms}}
`
	ex := funcExec(func(ctx context.Context, w Work) Result {
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			st := db.StatusMaterialized
			if p == "2025-01-03" {
				st = db.StatusFailed
			}
			res.Parts[p] = PartResult{Partition: p, Status: st}
		}
		return res
	})
	env := newTestEnv(t, ws, Options{Executor: ex})
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
}

// A retry child's title names its parent and, after a colon, the parent's
// title (before, the two ran together: "Retry failed of bf_x retry test"),
// cut to 200 characters without splitting a character.
func TestRetryTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300)
	for _, tc := range []struct{ title, want string }{
		{"", "Retry failed of bf_1"},
		{"  ", "Retry failed of bf_1"},
		{"EU catch-up", "Retry failed of bf_1: EU catch-up"},
		{long, "Retry failed of bf_1: " + strings.Repeat("é", 200-len([]rune("Retry failed of bf_1: ")))},
	} {
		got := retryTitle("bf_1", tc.title)
		if got != tc.want || !utf8.ValidString(got) {
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
	const ws = `
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 3, backoff: 1s}
    executor: {demo: {duration: 1ms}}
`
	var mu sync.Mutex
	var seen [][]string
	ex := funcExec(func(ctx context.Context, w Work) Result {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, w.Partitions)
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			if p == "2025-01-03" {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "flaky"}
				res.Err = errors.New("flaky")
				continue
			}
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
		}
		return res
	})
	env := newTestEnv(t, ws, Options{Executor: ex})
	env.start()
	ctx := context.Background()
	b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, ChunkSize: 5, MaxConcurrentRuns: 1})
	runID := waitRetryQueued(t, env, b.ID)
	id := env.ids["a.daily"]
	item := db.Materialization{AssetID: id, AssetKey: "a.daily", Partition: "2025-01-03", Idx: dayIdx(t, "2025-01-03"), Status: db.StatusMaterialized,
		RunID: "external-7", Source: "api", At: time.Now()}
	if _, err := env.store.RecordMaterializations(ctx, []db.Materialization{item}, "pipeline", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	mu.Lock()
	defer mu.Unlock()
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

// TestDownstreamChunkWaitsOnlyForItsUpstream: a downstream chunk starts as
// soon as the upstream chunks holding the partitions it reads have
// finished, not when the whole upstream asset has: while the last upstream
// day waits an hour to retry, the downstream days before it are built; the
// downstream day that reads it waits.
func TestDownstreamChunkWaitsOnlyForItsUpstream(t *testing.T) {
	t.Parallel()
	env, b := flakyUpstream(t, "2025-01-04", "2025-01-01", "2025-01-04", 2)
	env.waitBuilt(b, []string{"down.d 2025-01-01", "down.d 2025-01-02", "down.d 2025-01-03"}, "down.d 2025-01-04")
}

// flakyUpstream runs a backfill of up.d and down.d (daily, down.d reads the
// same day of up.d) over start..end in chunks of one day, at most two at
// once (conc), where building up.d's day failDay fails and waits an hour to
// retry.
func flakyUpstream(t *testing.T, failDay, start, end string, conc int64) (*builtEnv, db.Backfill) {
	const ws = `
assets:
  up.d:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 2, backoff: 1h}
    executor: {demo: {duration: 1ms}}
  down.d:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    deps: [up.d]
    executor: {demo: {duration: 1ms}}
`
	be := &builtEnv{}
	ex := funcExec(func(ctx context.Context, w Work) Result {
		be.mu.Lock()
		defer be.mu.Unlock()
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			if w.Asset == "up.d" && p == failDay {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "flaky"}
				res.Err = errors.New("flaky")
				continue
			}
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
			be.built = append(be.built, w.Asset+" "+p)
		}
		return res
	})
	be.testEnv = newTestEnv(t, ws, Options{Executor: ex})
	be.start()
	return be, be.create(Request{Assets: []string{"down.d", "up.d"}, Selector: Selector{Type: "range", Start: start, End: end}, ChunkSize: 1, MaxConcurrentRuns: conc})
}

// builtEnv is a test engine whose executor records what it built
// ("asset partition").
type builtEnv struct {
	*testEnv
	mu    sync.Mutex
	built []string
}

// waitBuilt waits until every one of want is built, then checks that not
// was not, and that backfill b still runs (a retry is due in an hour).
func (be *builtEnv) waitBuilt(b db.Backfill, want []string, not string) {
	t := be.t
	t.Helper()
	var got []string
	poll.Eventually(t, 10*time.Second, fmt.Sprintf("%v all built while an upstream day waits to retry", want), func() bool {
		be.mu.Lock()
		got = slices.Clone(be.built)
		be.mu.Unlock()
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	if slices.Contains(got, not) {
		t.Fatalf("the downstream day of the upstream day waiting to retry was built: %v", got)
	}
	f, err := be.store.Backfill(context.Background(), b.ID)
	if err != nil || f.State != db.BackfillRunning {
		t.Fatalf("backfill %+v %v, want still RUNNING (a retry is due in an hour)", f, err)
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

// TestDownstreamChunksPassOneWaitingForItsUpstream: a downstream chunk whose
// upstream chunk waits an hour to retry no longer holds back the downstream
// chunks after it. It is planned and queued with the reason it waits, and
// the chunks after it run as soon as their own upstream chunks finished.
// Before, planning stopped at the first waiting downstream chunk: days 03 to
// 05 of down.d waited the hour behind day 02.
func TestDownstreamChunksPassOneWaitingForItsUpstream(t *testing.T) {
	t.Parallel()
	env, b := flakyUpstream(t, "2025-01-02", "2025-01-01", "2025-01-05", 2)
	env.waitBuilt(b, []string{"down.d 2025-01-01", "down.d 2025-01-03", "down.d 2025-01-04", "down.d 2025-01-05"}, "down.d 2025-01-02")
	ctx := context.Background()
	f, err := env.store.Backfill(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := env.store.Runs(ctx, b.ID, nil, -1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var waiting *db.Run
	for i := range runs {
		if runs[i].Asset == "down.d" && runs[i].FirstKey == "2025-01-02" {
			waiting = &runs[i]
		}
	}
	if waiting == nil || waiting.State != db.RunQueued || waiting.Attempts != 0 {
		t.Fatalf("down.d 2025-01-02: %+v, want planned, queued, never attempted", waiting)
	}
	w, err := env.eng.WaitReason(ctx, f, *waiting)
	if err != nil || w == nil || !strings.Contains(w.Reason, "waits for upstream up.d") || !strings.Contains(w.Reason, "2025-01-02") {
		t.Fatalf("wait reason %+v %v", w, err)
	}
}

// TestFailedRunKeepsItsOutcomeAfterRetry: the partitions of a failed run,
// rebuilt later by a Retry failed, still read failed with their error on
// that run (what the run did), not materialized "built by" the retry, as if
// they had been built while it ran. Before, the run's header said "0
// materialized · 2 failed" above a list of materialized partitions (found
// by the UI audit).
func TestFailedRunKeepsItsOutcomeAfterRetry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	ex := funcExec(func(ctx context.Context, w Work) Result {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		res := Result{Parts: map[string]PartResult{}}
		for _, p := range w.Partitions {
			if first {
				res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "disk full"}
				res.Err = errors.New("disk full")
				continue
			}
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized}
		}
		return res
	})
	env := newTestEnv(t, dailyWS, Options{Executor: ex})
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
}

// TestDownstreamChunkWaitingTakesNoSlot: at one run at a time, a downstream
// chunk waiting for its upstream's retry does not take the backfill's only
// slot: the downstream chunks after it run, and once nothing is left but
// waiting, the backfill says what it waits for (its first queued chunk).
// Before, the waiting chunk held the slot, so the chunks after it waited the
// whole backoff, and GET of the backfill said nothing (found by the
// regression audit of 522c8d7).
func TestDownstreamChunkWaitingTakesNoSlot(t *testing.T) {
	t.Parallel()
	env, b := flakyUpstream(t, "2025-01-02", "2025-01-01", "2025-01-04", 1)
	env.waitBuilt(b, []string{"down.d 2025-01-01", "down.d 2025-01-03", "down.d 2025-01-04"}, "down.d 2025-01-02")
	ctx := context.Background()
	var w *RunWait
	poll.Eventually(t, 5*time.Second, "the backfill to say what its next chunk waits for", func() bool {
		f, err := env.store.Backfill(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w, err = env.eng.NextChunkWait(ctx, f); err != nil {
			t.Fatal(err)
		}
		return w != nil
	})
	if !strings.Contains(w.Reason, "retry backoff: attempt 2 of 2") {
		t.Fatalf("the backfill's wait %+v, want its first queued chunk's retry backoff", w)
	}
}
