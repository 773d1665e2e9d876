package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// DemoExecutor simulates work: each partition takes a random time between the
// asset's demo durations and fails with its failure rate; the asset's
// fail_keys fail their first fail_attempts attempts on this engine. It writes
// a few log lines per partition, tailed live on the run page like a
// command's output.
type DemoExecutor struct {
	// failures counts the attempts of each fail_keys partition so far
	// (asset and key); nil fails none of them.
	failures *demoFailures
}

// demoFailures counts, per asset and partition, the failures the demo
// executor has simulated for fail_keys on one engine.
type demoFailures struct {
	mu sync.Mutex
	n  map[[2]string]int
}

// fail reports whether this attempt of asset's partition key, one of its
// fail_keys, fails: the first limit attempts do.
func (f *demoFailures) fail(asset, key string, limit int) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[[2]string]int{}
	}
	k := [2]string{asset, key}
	if f.n[k] >= limit {
		return false
	}
	f.n[k]++
	return true
}

// Execute implements Executor.
func (d DemoExecutor) Execute(ctx context.Context, w Work) Result {
	minD, maxD, rate := 200*time.Millisecond, 2*time.Second, 0.0
	var failKeys map[string]bool
	failAttempts := 0
	if w.Def != nil && w.Def.Executor.Demo != nil {
		de := w.Def.Executor.Demo
		minD, maxD, rate = de.MinDuration, de.MaxDuration, de.FailureRate
		failAttempts = de.FailAttempts
		for _, k := range de.FailKeys {
			if failKeys == nil {
				failKeys = map[string]bool{}
			}
			failKeys[k] = true
		}
	}
	if maxD < minD {
		maxD = minD
	}
	out := &tailBuffer{max: LogLimit}
	defer trackLiveLog(w, out)() // the run page tails it (livelog.go)
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "%s %s\n", time.Now().UTC().Format("15:04:05.000Z07:00"), fmt.Sprintf(format, args...))
	}
	logf("demo: attempt %d of run %s: %s, %d %s", w.Attempt, w.RunID, w.Asset, len(w.Partitions), plural(int64(len(w.Partitions)), "partition", "partitions"))
	res := Result{Parts: map[string]PartResult{}}
	failed := 0
	for _, p := range w.Partitions {
		dur := minD
		if maxD > minD {
			dur += time.Duration(rand.Int64N(int64(maxD - minD)))
		}
		logf("%s: reading upstream inputs", p)
		select {
		case <-ctx.Done():
			logf("%s: stopped: %v", p, context.Cause(ctx))
			res.Err, res.Log = context.Cause(ctx), out.String()
			return res
		case <-time.After(dur):
		}
		switch {
		case failKeys[p] && d.failures.fail(w.Asset, p, failAttempts):
			logf("%s: ERROR: source export not found (in fail_keys: fails its first %d %s)", p, failAttempts, plural(int64(failAttempts), "attempt", "attempts"))
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "demo: source export not found"}
			failed++
		case rand.Float64() < rate:
			logf("%s: ERROR: simulated failure (failure_rate %g)", p, rate)
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "demo: simulated failure"}
			failed++
		default:
			rows := 1000 + rand.IntN(50000)
			logf("%s: wrote %d rows in %s", p, rows, dur.Round(time.Millisecond))
			meta, _ := json.Marshal(map[string]any{"rows": rows, "demo": true})
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized, Metadata: meta}
		}
	}
	if failed > 0 {
		res.Err = fmt.Errorf("demo: %d of %d %s failed", failed, len(w.Partitions), plural(int64(len(w.Partitions)), "partition", "partitions"))
	}
	logf("demo: done: %d materialized, %d failed", len(w.Partitions)-failed, failed)
	res.Log = out.String()
	return res
}
