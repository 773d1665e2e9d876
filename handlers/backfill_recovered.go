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
func (h *Handler) recoveredBy(ctx context.Context, bs []db.Backfill) (map[string]recovery, error) {
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
	memo := map[string]recovery{}
	var by func(b db.Backfill, depth int) recovery
	by = func(b db.Backfill, depth int) recovery {
		if r, ok := memo[b.ID]; ok {
			return r
		}
		memo[b.ID] = recovery{}
		for _, c := range children[b.ID] {
			if c.TotalPartitions < failures(b) {
				continue // launched before the parent had failed all it did
			}
			if rebuiltAll(c) || c.State == db.BackfillFailed && depth < retryDepth && by(c, depth+1).ID != "" {
				memo[b.ID] = recovery{ID: c.ID, Name: c.Name()}
				break
			}
		}
		return memo[b.ID]
	}
	out := map[string]recovery{}
	for _, b := range bs {
		if b.State != db.BackfillFailed {
			continue
		}
		if r := by(b, 1); r.ID != "" {
			out[b.ID] = r
		}
	}
	return out, nil
}

// recovery is the retry that recovered a failed backfill: its id and its
// name (its title, as pages name a backfill).
type recovery struct{ ID, Name string }

// rebuiltAll says whether b succeeded with every partition materialized.
func rebuiltAll(b db.Backfill) bool {
	return b.State == db.BackfillSucceeded && failures(b) == 0 && b.PartitionsMaterialized == b.TotalPartitions
}

// recoveredPtr is the API's recovered_by of id (its recovering retry) and
// recovered_by_title (that retry's name), or nils.
func recoveredPtr(recovered map[string]recovery, id string) (*string, *string) {
	if r, ok := recovered[id]; ok {
		return &r.ID, &r.Name
	}
	return nil, nil
}
