package db

import (
	"context"
	"database/sql"
	"errors"
)

// FirstUnfinishedRun is the chunk number and first key of backfill
// backfillID's first planned run that did not succeed; ok is false when
// every planned run succeeded (or none was planned).
func (s *Store) FirstUnfinishedRun(ctx context.Context, backfillID string) (chunk int64, firstKey string, ok bool, err error) {
	var row struct {
		Chunk    int64  `db:"chunk"`
		FirstKey string `db:"first_key"`
	}
	err = s.r.GetContext(ctx, &row, `SELECT chunk, first_key FROM runs WHERE backfill_id=? AND state != 'succeeded' ORDER BY chunk LIMIT 1`, backfillID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, err
	}
	return row.Chunk, row.FirstKey, true, nil
}

// SucceededRunsAfter counts backfill backfillID's runs after chunk that
// succeeded.
func (s *Store) SucceededRunsAfter(ctx context.Context, backfillID string, chunk int64) (int64, error) {
	var n int64
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM runs WHERE backfill_id=? AND chunk > ? AND state = 'succeeded'`, backfillID, chunk)
	return n, err
}
