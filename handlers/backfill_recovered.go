package handlers

import (
	"context"

	"github.com/tessera-dev/tessera/db"
)

// retryDepth bounds how many retries of retries count towards a recovery.
const retryDepth = 10

// recoveredBy maps each FAILED backfill of bs whose Retry failed rebuilt all
// it failed to build to the retry that did: a child of it, launched for at
// least as many partitions as it failed or skipped, that either succeeded
// with every partition materialized or failed and was itself recovered.
// The others are absent.
func (h *Handler) recoveredBy(ctx context.Context, bs []db.Backfill) (map[string]string, error) {
	var failed []string
	for _, b := range bs {
		if b.State == db.BackfillFailed {
			failed = append(failed, b.ID)
		}
	}
	if len(failed) == 0 {
		return nil, nil
	}
	kin, err := h.Store.RetryDescendants(ctx, failed, retryDepth)
	if err != nil {
		return nil, err
	}
	children := map[string][]db.Backfill{}
	for _, k := range kin {
		if k.ParentBackfillID != nil {
			children[*k.ParentBackfillID] = append(children[*k.ParentBackfillID], k)
		}
	}
	memo := map[string]string{}
	var by func(b db.Backfill, depth int) string
	by = func(b db.Backfill, depth int) string {
		if r, ok := memo[b.ID]; ok {
			return r
		}
		memo[b.ID] = ""
		for _, c := range children[b.ID] {
			if c.TotalPartitions < failures(b) {
				continue // launched before the parent had failed all it did
			}
			if rebuiltAll(c) || c.State == db.BackfillFailed && depth < retryDepth && by(c, depth+1) != "" {
				memo[b.ID] = c.ID
				break
			}
		}
		return memo[b.ID]
	}
	out := map[string]string{}
	for _, b := range bs {
		if b.State != db.BackfillFailed {
			continue
		}
		if r := by(b, 1); r != "" {
			out[b.ID] = r
		}
	}
	return out, nil
}

// rebuiltAll says whether b succeeded with every partition materialized.
func rebuiltAll(b db.Backfill) bool {
	return b.State == db.BackfillSucceeded && failures(b) == 0 && b.PartitionsMaterialized == b.TotalPartitions
}

// recoveredPtr is the API's recovered_by of id: its recovering retry or nil.
func recoveredPtr(recovered map[string]string, id string) *string {
	if r, ok := recovered[id]; ok {
		return &r
	}
	return nil
}
