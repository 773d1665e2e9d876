package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// RetryFailed launches a child backfill of the partitions that the
// finished backfill parentID failed (README: Retry failed).
func (e *Engine) RetryFailed(ctx context.Context, parentID string, o RetryOptions, actor string) (Created, error) {
	if mm := e.WorkspaceMismatch(); mm != nil {
		return Created{}, mm.Refusal("create backfills")
	}
	requestID, chunkSize, maxConc := o.RequestID, o.ChunkSize, o.MaxConcurrentRuns
	if err := checkRetryOptions(o); err != nil {
		return Created{}, err
	}
	p, err := e.Store.Backfill(ctx, parentID)
	if err != nil {
		return Created{}, notFound(err)
	}
	if requestID != "" {
		if c, err := e.Store.BackfillByRetry(ctx, parentID, requestID); err == nil {
			// The same request again: the same child. Other settings are
			// another request, refused as a reused Idempotency-Key is.
			if chunkSize > 0 && chunkSize != c.ChunkSize || maxConc > 0 && maxConc != c.MaxConcurrentRuns {
				return Created{}, &InputError{Conflict: true, Field: "retry_request_id",
					Msg: fmt.Sprintf("retry_request_id %q already created backfill %s with chunk_size %d and max_concurrent_runs %d; send the same settings (or none) to get it again, or a new retry_request_id for another retry",
						requestID, c.ID, c.ChunkSize, c.MaxConcurrentRuns)}
			}
			return Created{Backfill: c, Replayed: true}, nil
		}
	}
	if o.ExpectedStateVersion > 0 && o.ExpectedStateVersion != p.StateVersion {
		return Created{}, staleVersion(parentID, p.StateVersion, p.State, o.ExpectedStateVersion)
	}
	if !db.BackfillTerminal(p.State) && p.State != db.BackfillPaused {
		return Created{}, &InputError{Conflict: true, Field: "state", Msg: fmt.Sprintf("backfill %s is %s; retry-failed needs it finished or paused", parentID, p.State)}
	}
	if err := retryTaken(ctx, e.Store, p); err != nil {
		return Created{}, err
	}
	fails, err := e.Store.Failures(ctx, parentID)
	if err != nil {
		return Created{}, err
	}
	if len(fails) == 0 {
		return Created{}, &InputError{Conflict: true, Field: "state", Msg: fmt.Sprintf("backfill %s has no failed partitions", parentID)}
	}
	ws, ids := e.workspace()
	byID := map[int64]string{}
	for k, id := range ids {
		byID[id] = k
	}
	if chunkSize <= 0 {
		chunkSize = p.ChunkSize
	}
	if maxConc <= 0 {
		maxConc = p.MaxConcurrentRuns
	}
	// The parent's priority; one stored before priorities were bounded
	// takes the nearest bound.
	req := Request{Selector: Selector{Type: "retry"}, ChunkSize: chunkSize, MaxConcurrentRuns: maxConc, Priority: min(max(p.Priority, catalog.MinPriority), catalog.MaxPriority),
		Title: retryTitle(p.Name())}
	r := resolveRetry(ws, ids, fails, req, chunkSize)
	if r.total == 0 {
		return Created{}, &InputError{Conflict: true, Msg: "the failed partitions' assets are no longer declared"}
	}
	var rid *string
	if requestID != "" {
		rid = &requestID
	}
	parent := parentID
	b, err := e.insert(ctx, r, requestHash(req), nil, &parent, rid, actor)
	if err != nil {
		if requestID != "" && db.IsUniqueViolation(err) {
			if c, err2 := e.Store.BackfillByRetry(ctx, parentID, requestID); err2 == nil {
				return Created{Backfill: c, Replayed: true}, nil
			}
		}
		return Created{}, err
	}
	e.Wake()
	return Created{Backfill: b}, nil
}

// retryTaken is the 409 of a retry-failed whose work a retry of the same
// backfill already does or did: one still unfinished (a second would build
// the same partitions again), or one that succeeded having rebuilt at least
// as many partitions as the backfill failed (nothing is left to retry).
// The backfill's page offers no Retry failed then either. A retry that
// failed, or one launched while the backfill was paused and went on to fail
// more, leaves it free to retry.
func retryTaken(ctx context.Context, st *db.Store, p db.Backfill) error {
	kids, err := st.ChildBackfills(ctx, p.ID)
	if err != nil {
		return err
	}
	for _, k := range kids {
		switch {
		case !db.BackfillTerminal(k.State):
			return &InputError{Conflict: true, Field: "state", Params: map[string]string{"backfill": p.ID, "retry": k.ID, "state": k.State},
				Msg: fmt.Sprintf("backfill %s is being retried by %s (%s); wait for that retry to end, then retry what it failed", p.ID, k.ID, k.State)}
		case k.State == db.BackfillSucceeded && k.PartitionsMaterialized == k.TotalPartitions &&
			k.TotalPartitions >= p.PartitionsFailed+p.PartitionsUpstreamFailed:
			return &InputError{Conflict: true, Field: "state", Params: map[string]string{"backfill": p.ID, "retry": k.ID, "state": k.State},
				Msg: fmt.Sprintf("backfill %s has nothing left to retry: its retry %s rebuilt every partition it failed", p.ID, k.ID)}
		}
	}
	return nil
}

// checkRetryOptions is the 400 of a retry-failed option out of range.
func checkRetryOptions(o RetryOptions) error {
	requestID, chunkSize, maxConc := o.RequestID, o.ChunkSize, o.MaxConcurrentRuns
	switch {
	case len(requestID) > MaxRequestIDLen:
		return bad("retry_request_id", "retry_request_id is %d characters long; use at most %d", len(requestID), MaxRequestIDLen)
	case chunkSize < 0 || chunkSize > MaxChunkSize:
		return bad("chunk_size", "chunk_size must be between 1 and %d, got %d", MaxChunkSize, chunkSize)
	case maxConc < 0 || maxConc > MaxConcurrentRunsCap:
		return bad("max_concurrent_runs", "max_concurrent_runs must be between 1 and %d, got %d", MaxConcurrentRunsCap, maxConc)
	case o.ExpectedStateVersion < 0:
		return invalidExpected(o.ExpectedStateVersion)
	}
	return nil
}

// resolveRetry lays out the failed partitions of a backfill as the segments
// and ranges of its retry, in topological order of their assets, chunkSize
// partitions a chunk.
func resolveRetry(ws *catalog.Workspace, ids map[string]int64, fails []db.Failure, req Request, chunkSize int64) *resolved {
	r := &resolved{req: req, ranges: map[int64][]db.SelRange{}}
	perAsset := map[int64][]int64{}
	var order []int64
	for _, f := range fails {
		if _, ok := perAsset[f.AssetID]; !ok {
			order = append(order, f.AssetID)
		}
		perAsset[f.AssetID] = append(perAsset[f.AssetID], f.Idx)
	}
	var chunk int64
	for _, a := range ws.TopoOrder() {
		idxs, ok := perAsset[ids[a.Key]]
		if !ok {
			continue
		}
		pos := int64(len(r.segments))
		var rs []db.SelRange
		var n int64
		for _, i := range idxs { // sorted by idx
			if l := len(rs); l > 0 && rs[l-1].Hi == i-1 {
				rs[l-1].Hi = i
			} else {
				rs = append(rs, db.SelRange{Start: n, Lo: i, Hi: i})
			}
			n++
		}
		seg := db.Segment{Pos: pos, Asset: a.Key, AssetID: ids[a.Key], Partitions: n, FirstChunk: chunk, Chunks: (n + chunkSize - 1) / chunkSize}
		chunk += seg.Chunks
		r.total += n
		r.segments = append(r.segments, seg)
		r.ranges[pos] = rs
		r.assets = append(r.assets, a)
	}
	_ = order
	r.chunks = chunk
	return r
}

// retryTitle names a retry-failed child after its parent's name
// (db.Backfill.Name, never its id): "Retry failed: EU catch-up", cut to 200
// characters on a character boundary.
func retryTitle(parentName string) string {
	t := "Retry failed: " + strings.TrimSpace(parentName)
	if r := []rune(t); len(r) > 200 {
		t = string(r[:200])
	}
	return t
}
