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
	return applyPlannedStarting(ctx, tx, p, nil)
}

// runStarting is a run whose first attempt starts in the step that plans
// it (EmitPlannedAndStarted): its row is inserted as the attempts.started
// event leaves it (running, its attempt number, its upstream failures, its
// start), rather than inserted queued and then updated.
type runStarting struct{ attempt, upFailed, at int64 }

// applyPlannedStarting applies p; the runs of starting are written running.
func applyPlannedStarting(ctx context.Context, tx *sqlx.Tx, p RunsPlanned, starting map[string]runStarting) error {
	// The runs in statements of batchRows rows: a step planning eight
	// chunks writes them in one statement (one round trip on PostgreSQL).
	args := make([]any, 0, 18*len(p.Runs))
	for _, r := range p.Runs {
		state, attempts, upFailed, started, updated := RunQueued, int64(0), int64(0), (*int64)(nil), r.UpdatedAt
		if s, ok := starting[r.ID]; ok {
			state, attempts, upFailed, started, updated = RunRunning, s.attempt, s.upFailed, &s.at, s.at
		}
		args = append(args, r.ID, r.RunKey, r.BackfillID, r.Chunk, r.Seg, r.Asset, r.AssetID, r.Fingerprint, r.Partitions,
			r.FirstKey, r.LastKey, r.MaxAttempts, r.CreatedAt, updated, state, attempts, upFailed, started)
	}
	n, err := batchExecN(ctx, tx, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key,
		max_attempts, created_at, updated_at, state, attempts, upstream_failed, started_at)
		SELECT column1, column2, column3, column4, column5, column6, column7, column8, column9, column10, column11, column12, column13, column14,
		column15, column16, column17, column18
		FROM (VALUES `, nil, `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, `) WHERE true ON CONFLICT (run_key) DO NOTHING`, 18, args)
	if err != nil {
		return err
	}
	return execLater(ctx, tx, `UPDATE backfills SET next_chunk=`+greatest(dialectOf(tx))+`(next_chunk, ?), runs_active=runs_active+?, updated_at=? WHERE id=?`, p.NextChunk, n, p.At, p.BackfillID)
}
