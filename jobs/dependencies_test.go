package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

func TestDependenciesUpstreamFailedAndRetryFailed(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		failHour := "2025-01-01-05:00"
		var failing atomic.Bool
		failing.Store(true)
		ex := funcExec(func(ctx context.Context, w Work) Result {
			return partsResult(w, "one partition failed", func(p string) (string, bool) { return "boom", failing.Load() && p == failHour })
		})
		sw := newSwap(ex)
		env := newTestEnvOn(t, dialect, multiWS, Options{Executor: sw})
		env.start()
		ctx := context.Background()
		b := env.create(Request{Assets: []string{"down.daily", "up.hourly"}, Selector: Selector{Type: "range"}, ChunkSize: 6, MaxConcurrentRuns: 4})
		f := env.wait(b.ID, db.BackfillFailed, db.BackfillSucceeded)
		if f.State != db.BackfillFailed || f.PartitionsFailed != 1 || f.PartitionsUpstreamFailed != 1 || f.PartitionsMaterialized != 47+1 {
			t.Fatalf("final %+v", f)
		}
		// The downstream day that reads the failed hour was not attempted.
		downID := env.ids["down.daily"]
		if n := countRows(t, env.store, `SELECT COUNT(*) FROM partition_instances_all WHERE asset_id=? AND partition_key='2025-01-01'`, downID); n != 0 {
			t.Fatalf("the upstream-failed day was attempted %d times", n)
		}
		// Each run lists its partitions with what it did to them.
		runOf := func(asset, key string) db.Run {
			t.Helper()
			var id string
			if err := env.store.RawReader().Get(&id, `SELECT id FROM runs WHERE backfill_id=? AND asset=? AND first_key<=? AND last_key>=?`, b.ID, asset, key, key); err != nil {
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
	})
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
	ws := teststore.Assets(
		teststore.Asset("up.d", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 2, backoff: 1h}"),
		teststore.Asset("down.d", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "deps: [up.d]"),
	)
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
	poll.Eventually(t, 30*time.Second, "the backfill to say what its next chunk waits for", func() bool {
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
