package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// DemoExecutor simulates work: each partition takes a random time between the
// asset's demo durations and fails with its failure rate.
type DemoExecutor struct{}

// Execute implements Executor.
func (DemoExecutor) Execute(ctx context.Context, w Work) Result {
	minD, maxD, rate := 200*time.Millisecond, 2*time.Second, 0.0
	if w.Def != nil && w.Def.Executor.Demo != nil {
		d := w.Def.Executor.Demo
		minD, maxD, rate = d.MinDuration, d.MaxDuration, d.FailureRate
	}
	if maxD < minD {
		maxD = minD
	}
	res := Result{Parts: map[string]PartResult{}}
	failed := 0
	for _, p := range w.Partitions {
		d := minD
		if maxD > minD {
			d += time.Duration(rand.Int64N(int64(maxD - minD)))
		}
		select {
		case <-ctx.Done():
			res.Err = context.Cause(ctx)
			return res
		case <-time.After(d):
		}
		if rand.Float64() < rate {
			res.Parts[p] = PartResult{Partition: p, Status: db.StatusFailed, Error: "demo: simulated failure"}
			failed++
			continue
		}
		meta, _ := json.Marshal(map[string]any{"rows": 1000 + rand.IntN(50000), "demo": true})
		res.Parts[p] = PartResult{Partition: p, Status: db.StatusMaterialized, Metadata: meta}
	}
	if failed > 0 {
		res.Err = fmt.Errorf("demo: %d of %d %s failed", failed, len(w.Partitions), plural(int64(len(w.Partitions)), "partition", "partitions"))
	}
	return res
}
