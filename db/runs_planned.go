package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// RunFailures are partitions of one run recorded as finally failed.
type RunFailures struct {
	RunID   string    `json:"run_id"`
	AssetID int64     `json:"asset_id"`
	Parts   []PartRef `json:"parts"`
}

// RunsPlanned is the payload of runs.planned: new chunk runs of one backfill.
type RunsPlanned struct {
	BackfillID string `json:"backfill_id"`
	NextChunk  int64  `json:"next_chunk"`
	Runs       []Run  `json:"runs"`
	At         int64  `json:"at"`
}

func applyPlanned(ctx context.Context, tx *sqlx.Tx, p RunsPlanned) error {
	st, err := tx.PrepareNamedContext(ctx, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key,
		state, attempts, max_attempts, created_at, updated_at)
		VALUES (:id, :run_key, :backfill_id, :chunk, :seg, :asset, :asset_id, :fingerprint, :partitions, :first_key, :last_key, 'queued', 0, :max_attempts, :created_at, :updated_at)
		ON CONFLICT (run_key) DO NOTHING`)
	if err != nil {
		return err
	}
	defer st.Close()
	var n int64
	for _, r := range p.Runs {
		res, err := st.ExecContext(ctx, r)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n += k
	}
	_, err = tx.ExecContext(ctx, `UPDATE backfills SET next_chunk=MAX(next_chunk, ?), runs_active=runs_active+?, updated_at=? WHERE id=?`, p.NextChunk, n, p.At, p.BackfillID)
	return err
}
