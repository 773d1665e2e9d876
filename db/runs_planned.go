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
	// One statement text for every run, executed through the writer's
	// statement cache (an explicit Prepare would parse it every time).
	const q = `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key,
		state, attempts, max_attempts, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?, 'queued', 0, ?,?,?)
		ON CONFLICT (run_key) DO NOTHING`
	var n int64
	for _, r := range p.Runs {
		res, err := tx.ExecContext(ctx, q, r.ID, r.RunKey, r.BackfillID, r.Chunk, r.Seg, r.Asset, r.AssetID, r.Fingerprint, r.Partitions,
			r.FirstKey, r.LastKey, r.MaxAttempts, r.CreatedAt, r.UpdatedAt)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n += k
	}
	_, err := tx.ExecContext(ctx, `UPDATE backfills SET next_chunk=`+greatest(dialectOf(tx))+`(next_chunk, ?), runs_active=runs_active+?, updated_at=? WHERE id=?`, p.NextChunk, n, p.At, p.BackfillID)
	return err
}
