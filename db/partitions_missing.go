package db

import "context"

// MissingAfter returns up to limit indexes in (after, size) that have no status
// row, in order. Rollup blocks whose every index has a row are skipped
// without reading their rows (a backfill fills the space from its start, so
// the first holes are often past hundreds of thousands of rows); the other
// blocks' stored indexes are read block by block. Its cost is bounded by
// the rows of the partly filled blocks it walks past and the number of
// blocks, never by the rows of full ones.
func (s *Store) MissingAfter(ctx context.Context, assetID, after, size int64, limit int) ([]int64, error) {
	if after+1 >= size || limit <= 0 {
		return nil, nil
	}
	var full []int64
	// The rollup (kept in the transaction that writes the rows) and the
	// rows are read in separate statements, as the windows of rows always
	// were: the answer is as of the moments of its reads.
	if err := s.r.SelectContext(ctx, &full, `SELECT block FROM partition_rollup WHERE asset_id=? AND block >= ?
		GROUP BY block HAVING SUM(n) >= ? ORDER BY block`, assetID, (after+1)>>RollupShift, RollupBlock); err != nil {
		return nil, err
	}
	var out []int64
	for start := after + 1; start < size && len(out) < limit; {
		block := start >> RollupShift
		for len(full) > 0 && full[0] < block {
			full = full[1:]
		}
		end := min((block+1)<<RollupShift, size) - 1
		if len(full) > 0 && full[0] == block && end == (block+1)<<RollupShift-1 {
			start = end + 1
			continue
		}
		var present []int64
		if err := s.r.SelectContext(ctx, &present, `SELECT idx FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, assetID, start, end); err != nil {
			return nil, err
		}
		j := 0
		for i := start; i <= end && len(out) < limit; i++ {
			for j < len(present) && present[j] < i {
				j++
			}
			if j < len(present) && present[j] == i {
				continue
			}
			out = append(out, i)
		}
		start = end + 1
	}
	return out, nil
}
