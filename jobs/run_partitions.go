package jobs

import (
	"context"
	"fmt"
	"strings"

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
	total := run.Partitions
	out := make([]PartitionOutcome, len(keys))
	pos := make(map[string]int, len(keys))
	for i, k := range keys {
		out[i] = PartitionOutcome{Partition: k, Status: "not_run"}
		pos[k] = i
	}
	// Which attempt an instance id belongs to (each attempt is a new instance).
	attemptOf := map[string]int64{}
	for a := int64(1); a <= run.Attempts; a++ {
		for _, k := range keys {
			attemptOf[db.InstanceID(instanceRun(run.ID, a), run.Asset, k)] = a
		}
	}
	for off := 0; off < len(keys); off += 500 {
		part := keys[off:min(off+500, len(keys))]
		args := make([]any, 0, len(part)+2)
		args = append(args, run.AssetID, run.ID)
		for _, k := range part {
			args = append(args, k)
		}
		var rows []struct {
			Key    string  `db:"partition_key"`
			ID     string  `db:"id"`
			Status string  `db:"status"`
			Error  *string `db:"error"`
		}
		if err := e.Store.R.SelectContext(ctx, &rows, `SELECT partition_key, id, status, error FROM partition_instances
			WHERE asset_id=? AND run_id=? AND partition_key IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...); err != nil {
			return nil, 0, err
		}
		for _, r := range rows {
			a, i := attemptOf[r.ID], pos[r.Key]
			if a < out[i].Attempt {
				continue // an earlier attempt's instance
			}
			out[i].Status, out[i].Attempt, out[i].Error = r.Status, a, ""
			if r.Error != nil {
				out[i].Error = *r.Error
			}
		}
		var skipped []string
		if err := e.Store.R.SelectContext(ctx, &skipped, `SELECT partition_key FROM backfill_failures
			WHERE backfill_id=? AND asset_id=? AND run_id=? AND reason='upstream_failed' AND partition_key IN (?`+strings.Repeat(",?", len(part)-1)+`)`,
			append([]any{run.BackfillID}, args...)...); err != nil {
			return nil, 0, err
		}
		for _, k := range skipped {
			out[pos[k]].Status = "upstream_failed"
		}
	}
	return out, total, nil
}
