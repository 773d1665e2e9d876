package jobs

import (
	"context"
	"fmt"

	"github.com/tessera-dev/tessera/db"
)

// PartitionOutcome is one partition of a run and what the run did to it.
type PartitionOutcome struct {
	Partition string `json:"partition"`
	// Status is the outcome of the latest attempt that reported the
	// partition (materialized, failed, in_progress, interrupted, canceled),
	// upstream_failed when it was skipped because an upstream partition
	// failed, or not_run when no attempt has reported it.
	Status  string `json:"status"`
	Attempt int64  `json:"attempt,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RunPartitions lists the first limit partitions of a run, in chunk order,
// with what the run did to each, and how many partitions the run has.
func (e *Engine) RunPartitions(ctx context.Context, run db.Run, limit int) ([]PartitionOutcome, int64, error) {
	b, err := e.Store.Backfill(ctx, run.BackfillID)
	if err != nil {
		return nil, 0, err
	}
	segs, err := db.Segments(ctx, e.Store.R, run.BackfillID)
	if err != nil {
		return nil, 0, err
	}
	if int(run.Seg) >= len(segs) {
		return nil, 0, fmt.Errorf("run %s: segment %d of backfill %s is missing", run.ID, run.Seg, run.BackfillID)
	}
	keys, _, err := e.chunkKeysUpTo(ctx, e.Store.R, &b, &segs[run.Seg], run.Chunk, int64(limit))
	if err != nil {
		return nil, 0, err
	}
	out := make([]PartitionOutcome, len(keys))
	pos := make(map[string]int, len(keys))
	for i, k := range keys {
		out[i] = PartitionOutcome{Partition: k, Status: "not_run"}
		pos[k] = i
	}
	// Which attempt an instance id belongs to (each attempt is a new instance).
	attemptOf := map[string]int64{}
	for a := int64(1); a <= run.Attempts; a++ {
		instanceID := db.InstanceIDs(instanceRun(run.ID, a), run.Asset)
		for _, k := range keys {
			attemptOf[instanceID(k)] = a
		}
	}
	insts, err := e.Store.RunInstances(ctx, run.AssetID, []string{run.ID}, keys)
	if err != nil {
		return nil, 0, err
	}
	for _, in := range insts { // oldest first: the latest attempt wins
		o := &out[pos[in.Key]]
		o.Status, o.Attempt, o.Error = in.Status, attemptOf[in.ID], ""
		if in.Error != nil {
			o.Error = *in.Error
		}
	}
	skipped, err := e.Store.RunUpstreamFailed(ctx, run.BackfillID, run.AssetID, run.ID, keys)
	if err != nil {
		return nil, 0, err
	}
	for k := range skipped {
		out[pos[k]].Status = "upstream_failed"
	}
	return out, run.Partitions, nil
}
