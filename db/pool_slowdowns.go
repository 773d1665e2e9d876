package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// SlowPool records that pool starts no run before until (Unix ms): a
// remote service asked to slow down. A later end already recorded stays.
func (s *Store) SlowPool(ctx context.Context, pool string, until int64) error {
	_, err := s.writer(ctx).ExecContext(ctx, `INSERT INTO pool_slowdowns (pool, until) VALUES (?,?)
		ON CONFLICT (pool) DO UPDATE SET until = `+greatest(s.dialect)+`(pool_slowdowns.until, excluded.until)`, pool, until)
	return err
}

// PoolSlowDowns reads, in a step's transaction, the pools slowed down
// beyond now (Unix ms) and until when, whichever instance was told; the
// slow-downs that ended are deleted.
func PoolSlowDowns(ctx context.Context, tx *sqlx.Tx, now int64) (map[string]int64, error) {
	var rows []struct {
		Pool  string `db:"pool"`
		Until int64  `db:"until"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT pool, until FROM pool_slowdowns`); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	ended := false
	for _, r := range rows {
		if r.Until > now {
			out[r.Pool] = r.Until
		} else {
			ended = true
		}
	}
	if ended {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pool_slowdowns WHERE until <= ?`, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}
