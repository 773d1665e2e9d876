package db

import (
	"context"
	"slices"

	"github.com/jmoiron/sqlx"
)

// MissingAfter returns up to limit indexes in (after, size) that have no status
// row, that no status range holds and that no running attempt leases (a partition leased without a row is
// in progress, not missing), in order. Rollup blocks whose every index has a
// row or a lease (the rollup counts leased partitions in progress) are skipped
// without reading their rows (a backfill fills the space from its start, so
// the first holes are often past hundreds of thousands of rows); the other
// blocks' stored indexes are read block by block. Its cost is bounded by
// the rows of the partly filled blocks it walks past and the number of
// blocks, never by the rows of full ones.
//
// The rollup, the leases and the rows are read in one snapshot: a lease
// that ends meanwhile is read either as the lease or as the row written
// when it ended, never as neither.
func (s *Store) MissingAfter(ctx context.Context, assetID, after, size int64, limit int) ([]int64, error) {
	_, holes, err := s.PartitionsPage(ctx, assetID, after, size, nil, false, true, limit)
	return holes, err
}

// missingIn is MissingAfter in q's snapshot.
func missingIn(ctx context.Context, q *sqlx.Conn, assetID, after, size int64, limit int) ([]int64, error) {
	if after+1 >= size || limit <= 0 {
		return nil, nil
	}
	ls, err := leasedIdxs(ctx, q, assetID, after+1, size-1)
	if err != nil {
		return nil, err
	}
	return missingAfter(ctx, q, assetID, after, size, limit, ls)
}

// missingAfter is MissingAfter in q's snapshot, where ls are the leased
// partitions' indexes after after (in order).
func missingAfter(ctx context.Context, q *sqlx.Conn, assetID, after, size int64, limit int, ls []int64) ([]int64, error) {
	var full []int64
	if err := q.SelectContext(ctx, &full, `SELECT block FROM partition_rollup WHERE asset_id=? AND block >= ?
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
		if err := q.SelectContext(ctx, &present, `SELECT idx FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, assetID, start, end); err != nil {
			return nil, err
		}
		// Partitions status ranges hold are materialized.
		spans, err := rangeSpans(ctx, q, assetID, start, end)
		if err != nil {
			return nil, err
		}
		for _, r := range spans {
			for i := r.Lo; i <= r.Hi; i++ {
				present = append(present, i)
			}
		}
		if len(spans) > 0 {
			slices.Sort(present)
		}
		for len(ls) > 0 && ls[0] < start {
			ls = ls[1:]
		}
		if len(ls) > 0 && ls[0] <= end {
			for len(ls) > 0 && ls[0] <= end {
				present = append(present, ls[0])
				ls = ls[1:]
			}
			slices.Sort(present)
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
