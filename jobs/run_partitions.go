package jobs

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tessera-dev/tessera/catalog"
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
	// BuiltBy: the partition was materialized by another run (or a report)
	// after this run started, so the run did not build it again.
	BuiltBy string `json:"built_by,omitempty"`
}

// RunPartitions lists the first limit partitions of a run, in chunk order,
// with what the run did to each, and how many partitions the run has.
func (e *Engine) RunPartitions(ctx context.Context, run db.Run, limit int) ([]PartitionOutcome, int64, error) {
	b, err := e.Store.Backfill(ctx, run.BackfillID)
	if err != nil {
		return nil, 0, err
	}
	segs, err := db.Segments(ctx, e.Store.Reader(), run.BackfillID)
	if err != nil {
		return nil, 0, err
	}
	if int(run.Seg) >= len(segs) {
		return nil, 0, fmt.Errorf("run %s: segment %d of backfill %s is missing", run.ID, run.Seg, run.BackfillID)
	}
	keys, _, err := e.chunkKeysUpTo(ctx, e.Store.Reader(), &b, &segs[run.Seg], run.Chunk, int64(limit))
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
		instanceID := db.AttemptInstanceIDs(run.ID, a, run.Asset)
		for _, k := range keys {
			attemptOf[instanceID(k)] = a
		}
	}
	insts, err := e.Store.RunInstances(ctx, run.AssetID, []string{run.ID}, keys)
	if err != nil {
		return nil, 0, err
	}
	for _, in := range insts { // oldest first: the latest attempt wins
		if in.ID == db.ReportInstanceID(run.ID, run.Asset, in.Key) {
			continue // reported under the run's id while it built: not what the run did
		}
		o := &out[pos[in.Key]]
		o.Status, o.Attempt, o.Error = in.Status, attemptOf[in.ID], ""
		if in.Error != nil {
			o.Error = *in.Error
		}
		if o.Status == db.StatusFailed && o.Error == "" {
			// Reported failed (a report line, a result) without a message.
			o.Error = fmt.Sprintf("reported failed without an error message: see the log of attempt %d", o.Attempt)
		}
	}
	if run.StartedAt != nil {
		// Built by others while the run lasted (it then counted them as
		// materialized); what was rebuilt after it ended (a Retry failed)
		// leaves the run's own outcome.
		until := int64(math.MaxInt64)
		if run.FinishedAt != nil {
			until = *run.FinishedAt
		}
		others, err := e.Store.MaterializedByOthers(ctx, run.AssetID, run.ID, *run.StartedAt, until, keys)
		if err != nil {
			return nil, 0, err
		}
		for k, by := range others {
			o := &out[pos[k]]
			if o.Status == db.StatusMaterialized {
				continue
			}
			o.Status, o.Error, o.BuiltBy = db.StatusMaterialized, "", by
		}
	}
	skipped, err := e.Store.RunUpstreamFailed(ctx, run.BackfillID, run.AssetID, run.ID, keys)
	if err != nil {
		return nil, 0, err
	}
	ws, ids := e.workspace()
	asset := ws.Asset(run.Asset)
	for k := range skipped {
		o := &out[pos[k]]
		o.Status, o.Error, o.BuiltBy = "upstream_failed", "not attempted: an upstream partition failed in this backfill", ""
		if asset == nil {
			continue
		}
		culprit, err := e.upstreamCulprit(ctx, ws, ids, b.ID, segs, asset, k)
		if err != nil {
			return nil, 0, err
		}
		if culprit != "" {
			o.Error = "not attempted: " + culprit
		}
	}
	return out, run.Partitions, nil
}

// upstreamCulprit names the upstream partition, selected in the same
// backfill, whose failure kept key of asset from being attempted.
func (e *Engine) upstreamCulprit(ctx context.Context, ws *catalog.Workspace, ids map[string]int64, backfillID string, segs []db.Segment, asset *catalog.Asset, key string) (string, error) {
	downSp, err := e.space(ctx, asset.Key)
	if err != nil {
		return "", err
	}
	for _, d := range asset.Deps {
		up := ws.Asset(d.Asset)
		if up == nil || !slices.ContainsFunc(segs, func(s db.Segment) bool { return s.Asset == d.Asset }) {
			continue
		}
		upSp, err := e.space(ctx, up.Key)
		if err != nil {
			return "", err
		}
		rs, err := catalog.UpstreamOf(d, asset.Scheme, downSp, up.Scheme, upSp, key)
		if err != nil {
			continue
		}
		for _, r := range rs {
			f, ok, err := e.Store.FirstFailureIn(ctx, backfillID, ids[up.Key], r.Lo, r.Hi)
			if err != nil {
				return "", err
			}
			if !ok {
				continue
			}
			if f.Reason == "upstream_failed" {
				return fmt.Sprintf("upstream %s %s was not attempted either (its own upstream failed)", up.Key, f.Key), nil
			}
			return fmt.Sprintf("upstream %s %s failed; Retry failed rebuilds both", up.Key, f.Key), nil
		}
	}
	return "", nil
}
