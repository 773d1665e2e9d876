package jobs

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// RunWait says why a queued run has not started, in words for the chunk
// table, the run page and the API. HolderRunID names the run it waits for,
// when that is the reason: one holding the lease on some of its partitions,
// or the upstream chunk holding partitions it reads.
type RunWait struct {
	Reason      string `json:"reason"`
	HolderRunID string `json:"holder_run_id,omitempty"`
}

// WaitReason explains why run r of backfill b is queued: the backfill is
// paused or canceling, a retry waits out its backoff, an upstream chunk of
// the backfill it reads has not finished, another run holds the lease on
// some of its partitions, or no slot is free. It returns nil for a
// run that is not queued. It reads the store as the controller would and
// writes nothing.
func (e *Engine) WaitReason(ctx context.Context, b db.Backfill, r db.Run) (*RunWait, error) {
	ws, err := e.WaitReasons(ctx, b, []db.Run{r})
	return ws[r.ID], err
}

// WaitReasons is WaitReason for several runs of backfill b (a page of its
// chunk table), reading the backfill's segments once; runs that are not
// queued have no entry.
func (e *Engine) WaitReasons(ctx context.Context, b db.Backfill, runs []db.Run) (map[string]*RunWait, error) {
	out := map[string]*RunWait{}
	var segs []db.Segment
	for _, r := range runs {
		if r.State != db.RunQueued {
			continue
		}
		if segs == nil {
			var err error
			if segs, err = db.Segments(ctx, e.Store.Reader(), b.ID); err != nil {
				return nil, err
			}
		}
		w, err := e.waitReason(ctx, b, segs, r)
		if err != nil {
			return nil, err
		}
		out[r.ID] = w
	}
	return out, nil
}

func (e *Engine) waitReason(ctx context.Context, b db.Backfill, segs []db.Segment, r db.Run) (*RunWait, error) {
	now := e.Now()
	what := "this chunk"
	if r.Attempts > 0 {
		what = fmt.Sprintf("attempt %d", r.Attempts+1)
	}
	switch b.State {
	case db.BackfillPaused:
		return &RunWait{Reason: fmt.Sprintf("held: the backfill is paused; %s starts when it is resumed", what)}, nil
	case db.BackfillCanceling, db.BackfillCanceled:
		return &RunWait{Reason: "will not start: the backfill is being canceled"}, nil
	}
	if ws, _ := e.workspace(); ws == nil || ws.Asset(r.Asset) == nil {
		return undeclaredWait([]string{r.Asset}), nil
	}
	if r.NotBefore != nil && *r.NotBefore > db.Millis(now) {
		at := db.FromMillis(*r.NotBefore)
		return &RunWait{Reason: fmt.Sprintf("retry backoff: attempt %d of %d starts at %s UTC (in %s)",
			r.Attempts+1, r.MaxAttempts, at.UTC().Format("15:04:05"), catalog.HumanDuration(at.Sub(now).Round(time.Second)))}, nil
	}
	if w, err := e.upstreamWait(ctx, b, segs, r); err != nil || w != nil {
		return w, err
	}
	if w, err := e.leaseWait(ctx, b, segs, r); err != nil || w != nil {
		return w, err
	}
	if w := e.slotWait(b, r.Asset); w != nil {
		return w, nil
	}
	return &RunWait{Reason: startsNextStep}, nil
}

// startsNextStep is the wait reason of a run nothing holds.
const startsNextStep = "starts at the controller's next step"

// NextChunkWait says why running backfill b, none of whose runs is running,
// does not go on: its next chunk's upstream has not finished, its pool is
// full or throttled, or the server runs all it may; else what its first
// queued chunk waits for (a retry's backoff, its upstream, a lease). It
// returns nil when the backfill is not in that case or goes on at the next
// step. It writes nothing.
func (e *Engine) NextChunkWait(ctx context.Context, b db.Backfill) (*RunWait, error) {
	if b.State != db.BackfillRunning || b.RunsRunning > 0 {
		return nil, nil
	}
	segs, err := db.Segments(ctx, e.Store.Reader(), b.ID)
	if err != nil {
		return nil, err
	}
	if ws, _ := e.workspace(); len(undeclaredAssets(ws, segs)) > 0 {
		return undeclaredWait(undeclaredAssets(ws, segs)), nil
	}
	if seg := segmentOf(segs, b.NextChunk); seg != nil && b.NextChunk < b.TotalChunks {
		next := db.Run{BackfillID: b.ID, Chunk: b.NextChunk, Seg: seg.Pos, Asset: seg.Asset}
		if w, err := e.upstreamWait(ctx, b, segs, next); err != nil || w != nil {
			if w != nil {
				w.Reason = fmt.Sprintf("chunk %d %s", b.NextChunk, w.Reason)
			}
			return w, err
		}
		if w := e.slotWait(b, seg.Asset); w != nil {
			w.Reason = fmt.Sprintf("chunk %d %s", b.NextChunk, w.Reason)
			return w, nil
		}
	}
	// Its next chunk would start, or every chunk is planned: what its first
	// queued chunk waits for (a retry's backoff, its upstream, a lease).
	queued, ok, err := e.Store.FirstQueuedRun(ctx, b.ID)
	if err != nil || !ok {
		return nil, err
	}
	w, err := e.waitReason(ctx, b, segs, queued)
	if err != nil || w == nil || w.Reason == startsNextStep {
		return nil, err
	}
	w.Reason = fmt.Sprintf("chunk %d %s", queued.Chunk, w.Reason)
	return w, nil
}

// slotWait is why a run of backfill b for asset would not start now for
// want of a slot: the backfill's, its pool's (full or throttled) or the
// server's; nil when one is free.
func (e *Engine) slotWait(b db.Backfill, asset string) *RunWait {
	now := e.Now()
	if b.RunsRunning >= b.MaxConcurrentRuns {
		return &RunWait{Reason: fmt.Sprintf("waits for a free slot: %d of the backfill's %d concurrent runs are running", b.RunsRunning, b.MaxConcurrentRuns)}
	}
	ws, _ := e.workspace()
	if a := ws.Asset(asset); a != nil && a.Pool != "" {
		if def, ok := ws.Pools[a.Pool]; ok {
			if def.MaxConcurrentRuns > 0 && e.pools.snapshot()[a.Pool] >= def.MaxConcurrentRuns {
				return &RunWait{Reason: fmt.Sprintf("waits for a free slot in pool %s (%d %s at once)", a.Pool, def.MaxConcurrentRuns, plural(int64(def.MaxConcurrentRuns), "run", "runs"))}
			}
			if why := e.pools.holding(ws, a.Pool, now); why != "" {
				return &RunWait{Reason: fmt.Sprintf("waits for pool %s: %s", a.Pool, why)}
			}
		}
	}
	if n := e.activeCount(); n >= e.opts.MaxConcurrentRuns {
		return &RunWait{Reason: fmt.Sprintf("waits for a free slot: the server runs at most %d %s at once (TESSERA_MAX_CONCURRENT_RUNS)", e.opts.MaxConcurrentRuns, plural(int64(e.opts.MaxConcurrentRuns), "attempt", "attempts"))}
	}
	return nil
}

// upstreamWait finds the upstream chunk of the backfill that downstream run
// r waits for, as the controller would.
func (e *Engine) upstreamWait(ctx context.Context, b db.Backfill, segs []db.Segment, r db.Run) (*RunWait, error) {
	if r.Seg <= 0 || int(r.Seg) >= len(segs) {
		return nil, nil
	}
	ws, _ := e.workspace()
	asset := ws.Asset(r.Asset)
	if asset == nil {
		return nil, nil
	}
	up, err := e.upstreamPending(ctx, e.Store.Reader(), ws, &b, segs, nil, &segs[r.Seg], asset, r.Chunk)
	if err != nil || !up.Wait {
		return nil, err
	}
	h, ok, err := e.Store.FirstUnfinishedRunIn(ctx, b.ID, up.First, up.Last)
	if err != nil {
		return nil, err
	}
	if !ok || up.Asset == "" {
		return &RunWait{Reason: "waits for its upstream chunks in this backfill to finish"}, nil
	}
	span := h.FirstKey
	if h.LastKey != h.FirstKey {
		span += " … " + h.LastKey
	}
	what := h.State
	if h.State == db.RunQueued && h.Attempts > 0 {
		what = "waiting to retry"
	}
	return &RunWait{Reason: fmt.Sprintf("waits for upstream %s: its chunk %d (%s) holds partitions this chunk reads and is %s", up.Asset, h.Chunk, span, what),
		HolderRunID: h.ID}, nil
}

// leaseWait finds the runs building some of r's partitions now (their
// in-progress status row is a lease), as prepareAttempt would.
func (e *Engine) leaseWait(ctx context.Context, b db.Backfill, segs []db.Segment, r db.Run) (*RunWait, error) {
	if int(r.Seg) >= len(segs) {
		return nil, nil
	}
	keys, idx, err := e.chunkKeys(ctx, e.Store.Reader(), &b, &segs[r.Seg], r.Chunk)
	if err != nil {
		return nil, err
	}
	lo, hi := indexSpan(idx)
	if lo < 0 {
		return nil, nil
	}
	busy, err := e.Store.InProgressKeys(ctx, r.AssetID, lo, hi, 0)
	if err != nil {
		return nil, err
	}
	if len(busy) == 0 {
		return nil, nil
	}
	inChunk := make(map[string]bool, len(keys))
	for _, k := range keys {
		inChunk[k] = true
	}
	var held []string
	for _, k := range busy {
		if inChunk[k] {
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	sort.Strings(held)
	rows, err := e.Store.LeaseHolders(ctx, r.AssetID, held, r.ID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	holder := rows[0].RunID
	var theirs []string
	for _, row := range rows {
		if row.RunID == holder {
			theirs = append(theirs, row.Key)
		}
	}
	who := "run " + holder
	if hr, err := e.Store.Run(ctx, holder); err == nil {
		if hr.BackfillID == b.ID {
			who = fmt.Sprintf("run %s (chunk %d of this backfill)", holder, hr.Chunk)
		} else {
			who = fmt.Sprintf("run %s (chunk %d of backfill %s)", holder, hr.Chunk, hr.BackfillID)
		}
	}
	parts := "partition " + theirs[0]
	if n := len(theirs) - 1; n > 0 {
		parts = fmt.Sprintf("partitions %s and %d more", theirs[0], n)
	}
	holders := map[string]bool{}
	for _, row := range rows {
		holders[row.RunID] = true
	}
	others := ""
	if n := len(holders) - 1; n > 0 {
		others = fmt.Sprintf(" (and %d other runs)", n)
	}
	return &RunWait{HolderRunID: holder, Reason: fmt.Sprintf("waits for %s%s, which is building this chunk's %s: a partition is built by one run at a time; this chunk starts when they are released",
		who, others, parts)}, nil
}
