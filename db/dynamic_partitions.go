package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// DynamicKeys holds the keys of every dynamic partition set, in insertion
// order. It implements catalog.DynamicKeys.
type DynamicKeys map[string][]string

// DynamicKeys returns the keys of one set.
func (d DynamicKeys) DynamicKeys(set string) []string { return d[set] }

// LoadDynamicKeys reads every dynamic partition set.
func (s *Store) LoadDynamicKeys(ctx context.Context) (DynamicKeys, error) {
	rows, err := s.r.QueryxContext(ctx, `SELECT set_name, key FROM dynamic_partitions ORDER BY set_name, seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := DynamicKeys{}
	for rows.Next() {
		var set, key string
		if err := rows.Scan(&set, &key); err != nil {
			return nil, err
		}
		out[set] = append(out[set], key)
	}
	return out, rows.Err()
}

// AddDynamicKeys appends keys to a dynamic set (keys already present are kept
// where they are) and returns how many were new. One event, same transaction.
func (s *Store) AddDynamicKeys(ctx context.Context, set string, keys []string, actor string, now time.Time) (int, error) {
	added := 0
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		var next int64
		if err := tx.GetContext(ctx, &next, `SELECT COALESCE(MAX(seq)+1, 0) FROM dynamic_partitions WHERE set_name=?`, set); err != nil {
			return err
		}
		var newKeys []string
		for _, k := range keys {
			res, err := tx.ExecContext(ctx, `INSERT INTO dynamic_partitions (set_name, key, seq, added_at) VALUES (?,?,?,?) ON CONFLICT DO NOTHING`, set, k, next, Millis(now))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				next++
				added++
				newKeys = append(newKeys, k)
			}
		}
		if added == 0 {
			return nil
		}
		_, err := AppendEvent(ctx, tx, "dynamic_partitions.added", "dynamic:"+set, actor, map[string]any{"keys": newKeys}, "", now)
		return err
	})
	return added, err
}
