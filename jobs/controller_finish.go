package jobs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// finish decides what a completed attempt means for its run.
func (e *Engine) finish(ctx context.Context, tx *db.Tx, c completion, bfState string, now time.Time) (db.AttemptEnd, error) {
	a, res := c.act, c.res
	run := a.run // kept up to date by prepareAttempt (upstream failures) or read at recovery
	state := res.State
	if state == "" {
		state = db.AttemptSucceeded
		if res.Err != nil {
			state = db.AttemptFailed
		}
	}
	errMsg := ""
	if res.Err != nil {
		errMsg = truncate(res.Err.Error(), 2000)
	}
	end := db.AttemptEnd{RunID: run.ID, BackfillID: run.BackfillID, Attempt: a.attempt, AssetID: run.AssetID, Asset: run.Asset, State: state, Error: errMsg,
		Started: db.Millis(a.started)}
	if !res.EndedAt.IsZero() {
		end.Finished = db.Millis(res.EndedAt)
	}
	if a.asset != nil {
		end.CodeVersion = a.asset.CodeVersion
	}
	allOK, failedParts := settleParts(&end, a, res, state, errMsg)
	if state == db.AttemptSucceeded && !allOK {
		end.State = db.AttemptFailed
		if end.Error == "" {
			end.Error = fmt.Sprintf("%d of %d %s failed", len(failedParts), len(a.parts), plural(int64(len(a.parts)), "partition", "partitions"))
			if other := run.Partitions - int64(len(a.parts)); other > 0 {
				// A retry builds what earlier attempts left, and partitions of a
				// failed upstream are skipped: say so, or "1 of 1" reads wrong
				// beside a chunk of 3.
				end.Error = fmt.Sprintf("%d of %d %s failed in this attempt; the chunk's other %d %s built earlier or skipped",
					len(failedParts), len(a.parts), plural(int64(len(a.parts)), "partition", "partitions"), other, plural(other, "was", "were"))
			}
		}
	}
	switch {
	case allOK && run.UpstreamFailed == 0:
		end.RunState = db.RunSucceeded
	case allOK:
		end.RunState = db.RunFailed
		end.Error = fmt.Sprintf("%d %s not built: an upstream partition failed", run.UpstreamFailed, plural(run.UpstreamFailed, "partition", "partitions"))
	case state == db.AttemptCanceled || bfState == db.BackfillCanceling:
		end.RunState = db.RunCanceled
		if len(failedParts) > 0 {
			end.RunState = db.RunFailed
			end.Failures = failedParts
		}
	case state == db.AttemptInterrupted:
		end.RunState = db.RunQueued
	default:
		failures, err := db.FailedAttemptsBesides(ctx, tx, run.ID, a.attempt)
		if err != nil {
			return end, err
		}
		failures++
		if failures < run.MaxAttempts {
			end.RunState = db.RunQueued
			end.NotBefore = db.Millis(now.Add(retryDelay(a.asset, failures, res.RetryAfter)))
		} else {
			end.RunState = db.RunFailed
			end.Failures = failedParts
		}
	}
	if res.Log != "" {
		if err := db.SaveAttemptLog(ctx, tx, run.ID, a.attempt, res.Log); err != nil {
			return end, err
		}
	}
	return end, nil
}

// settleParts sets the status of each partition of the attempt from what
// the executor reported, appending them to end.Parts; it returns whether
// all were materialized and which failed.
func settleParts(end *db.AttemptEnd, a *active, res Result, state, errMsg string) (bool, []db.PartRef) {
	restore := state == db.AttemptInterrupted || state == db.AttemptCanceled
	allOK := true
	var failedParts []db.PartRef
	end.Parts = slices.Grow(end.Parts, len(a.parts)) // once, not by doubling: 136 bytes a partition
	for _, p := range a.parts {
		pr, reported := res.Parts[p.Key]
		switch {
		case reported && (pr.Status == db.StatusMaterialized || pr.Status == db.StatusFailed):
			p.Status, p.Metadata, p.Error = pr.Status, pr.Metadata, pr.Error
		case restore:
			p.Status = state
		case res.Err == nil && state == db.AttemptSucceeded:
			p.Status = db.StatusMaterialized
		default:
			p.Status = db.StatusFailed
			p.Error = errMsg
		}
		if p.Status != db.StatusMaterialized {
			allOK = false
		}
		if p.Status == db.StatusFailed {
			failedParts = append(failedParts, db.PartRef{Key: p.Key, Idx: p.Idx})
		}
		end.Parts = append(end.Parts, p)
	}
	return allOK, failedParts
}

// retryDelay is how long a failed run waits before its next attempt: the
// asset's backoff (1 s by default) doubled per failure, at most an hour,
// and never less than the executor's Retry-After.
func retryDelay(asset *catalog.Asset, failures int64, retryAfter time.Duration) time.Duration {
	backoff := time.Second
	if asset != nil && asset.Retries.Backoff > 0 {
		backoff = asset.Retries.Backoff
	}
	d := backoff << min(failures-1, 16)
	if d > time.Hour || d <= 0 {
		d = time.Hour
	}
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// upstreamFailed reports whether an upstream partition that key reads failed
// (or was skipped) in this backfill.
func (e *Engine) upstreamFailed(ctx context.Context, tx *db.Tx, ws *catalog.Workspace, ids map[string]int64, p *bfPlan, asset *catalog.Asset, key string) (bool, error) {
	downSp, err := e.space(ctx, asset.Key)
	if err != nil {
		return false, err
	}
	for _, d := range asset.Deps {
		inBackfill := false
		for _, s := range p.segs {
			inBackfill = inBackfill || s.Asset == d.Asset
		}
		up := ws.Asset(d.Asset)
		if !inBackfill || up == nil {
			continue
		}
		upSp, err := e.space(ctx, up.Key)
		if err != nil {
			return false, err
		}
		rs, err := catalog.UpstreamOf(d, asset.Scheme, downSp, up.Scheme, upSp, key)
		if err != nil {
			continue
		}
		for _, r := range rs {
			f, err := db.UpstreamFailedIn(ctx, tx, p.b.ID, ids[up.Key], r.Lo, r.Hi)
			if err != nil || f {
				return f, err
			}
		}
	}
	return false, nil
}

// queuedRunFailures lists, for each run of backfill b that waits for a retry
// (queued after a failed attempt), the partitions its last attempt failed:
// once the backfill is canceled those runs never retry, and the partitions
// count as failed (retry-failed then takes them).
func (e *Engine) queuedRunFailures(ctx context.Context, tx *db.Tx, b *db.Backfill) ([]db.RunFailures, error) {
	runs, err := db.RunsAwaitingRetry(ctx, tx, b.ID)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, nil
	}
	segs, err := e.segments(ctx, tx, b.ID)
	if err != nil {
		return nil, err
	}
	var out []db.RunFailures
	ws, _ := e.workspace()
	for _, r := range runs {
		if int(r.Seg) >= len(segs) {
			return nil, fmt.Errorf("run %s: segment %d of backfill %s is missing", r.ID, r.Seg, b.ID)
		}
		if ws == nil || ws.Asset(segs[r.Seg].Asset) == nil {
			continue // its partitions are not known here (backfill_undeclared.go)
		}
		keys, idx, err := e.chunkKeys(ctx, tx, b, &segs[r.Seg], r.Chunk)
		if err != nil {
			return nil, err
		}
		failed, err := db.FailedByRun(ctx, tx, r.AssetID, r.ID, keys)
		if err != nil {
			return nil, err
		}
		rf := db.RunFailures{RunID: r.ID, AssetID: r.AssetID}
		for i, k := range keys {
			if failed[k] {
				rf.Parts = append(rf.Parts, db.PartRef{Key: k, Idx: idx[i]})
			}
		}
		if len(rf.Parts) > 0 {
			out = append(out, rf)
		}
	}
	return out, nil
}

// plural picks the word for n.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
