package db

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// fillStaleBlocksVersion is the migration that stores the staleness facts
// of the status rows written before migration 15 created staleness_blocks.
// It is Go, not SQL, because the facts are encoded by encodeBlock.
const fillStaleBlocksVersion = 16

// goMigrations are the migrations written in Go, numbered with the SQL
// files of migrations/.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(fillStaleBlocksVersion,
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return fillStaleBlocks(ctx, tx) }},
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `DELETE FROM staleness_blocks`)
				return err
			}}),
	}
}

// txQuerier is a transaction: goose's *sql.Tx or Store.Tx's.
type txQuerier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// fillStaleBlocks stores the facts of every block of every status row
// (each with a new gen), asset by asset, inside transaction tx: the
// migration, and the benchmarks' fixtures.
func fillStaleBlocks(ctx context.Context, tx txQuerier) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT asset_id FROM partition_status`)
	if err != nil {
		return err
	}
	var assets []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		assets = append(assets, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range assets {
		rows, err := tx.QueryContext(ctx, `SELECT idx * 32 + materialized + (tainted_at IS NOT NULL) * 2
				+ (CASE status WHEN 'failed' THEN 4 WHEN 'in_progress' THEN 8 ELSE 0 END),
				COALESCE(last_mat_at, 0), COALESCE(last_mat_code_version, '')
			FROM partition_status INDEXED BY partition_status_staleness WHERE asset_id=? AND idx >= 0 ORDER BY idx`, id)
		if err != nil {
			return err
		}
		b := &baseFacts{}
		if err := scanFacts(rows, b, map[string]string{}); err != nil {
			return err
		}
		for j := 0; j < len(b.Idx); {
			block := b.Idx[j] >> staleBlockShift
			k := j
			for k < len(b.Idx) && b.Idx[k]>>staleBlockShift == block {
				k++
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO staleness_blocks (asset_id, block, gen, facts) VALUES (?,?,random(),?)
				ON CONFLICT (asset_id, block) DO UPDATE SET gen=excluded.gen, facts=excluded.facts`, id, block, encodeBlock(b, block, j, k)); err != nil {
				return err
			}
			j = k
		}
	}
	return nil
}
