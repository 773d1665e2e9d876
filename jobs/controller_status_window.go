package jobs

import "github.com/tessera-dev/tessera/db"

// statusWindow is the status rows of one asset's partitions with an index
// from lo to hi, read once for the chunks a step plans: a backfill's chunks
// are consecutive index ranges, and one statement for the step's chunks
// replaces one a chunk (on PostgreSQL a round trip each). Rows written in
// the step before planning (the attempts it finished) are read with them;
// the partitions the step's own attempts take are in planRound.claimed.
type statusWindow struct {
	lo, hi int64
	rows   map[string]string
}

// statusRows answers the status rows of the asset's partitions lo to hi
// (by key). When they are not in the window read so far, it reads a new
// one from lo that also covers as many chunks of that span after it as
// the backfill p may still start in this step.
func (r *planRound) statusRows(p *bfPlan, assetID, lo, hi int64) (map[string]string, error) {
	w := r.statuses[assetID]
	if w == nil || lo < w.lo || hi > w.hi {
		ahead := int64(min(r.slots, 64))
		if left := p.b.MaxConcurrentRuns - p.running; left < ahead {
			ahead = left
		}
		ahead = max(ahead, 1)
		span := hi - lo + 1
		end := hi + (ahead-1)*span
		if end-lo > 20000 {
			end = max(hi, lo+20000)
		}
		rows, err := db.StoredStatusRows(r.ctx, r.tx, assetID, lo, end)
		if err != nil {
			return nil, err
		}
		w = &statusWindow{lo: lo, hi: end, rows: rows}
		r.statuses[assetID] = w
	}
	return w.rows, nil
}
