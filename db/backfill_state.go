package db

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// BackfillStateChanged is the payload of backfill.state.
type BackfillStateChanged struct {
	ID        string `json:"id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Version   int64  `json:"state_version"`
	Terminate bool   `json:"terminate,omitempty"`
	Reason    string `json:"reason,omitempty"`
	At        int64  `json:"at"`
	// Failures: on CANCELED, the partitions that runs waiting for a retry
	// had failed; those runs never retry, so the partitions count as failed.
	Failures []RunFailures `json:"failures,omitempty"`
}

func applyState(ctx context.Context, tx *sqlx.Tx, p BackfillStateChanged) error {
	res, err := tx.ExecContext(ctx, `UPDATE backfills SET state=?, state_version=?, updated_at=?,
		terminate = `+greatest(dialectOf(tx))+`(terminate, ?),
		started_at = CASE WHEN ?='RUNNING' THEN COALESCE(started_at, ?) ELSE started_at END,
		finished_at = CASE WHEN ? IN ('CANCELED','SUCCEEDED','FAILED') THEN ? ELSE finished_at END
		WHERE id=? AND state=?`, p.To, p.Version, p.At, p.Terminate, p.To, p.At, p.To, p.At, p.ID, p.From)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("backfill %s: transition %s -> %s does not apply", p.ID, p.From, p.To)
	}
	if p.To == BackfillCanceled || p.To == BackfillCanceling && p.From == BackfillPending {
		var failed int64
		for _, rf := range p.Failures {
			for _, pr := range rf.Parts {
				if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_failures (backfill_id, asset_id, partition_key, idx, reason, run_id) VALUES (?,?,?,?,'failed',?)
					ON CONFLICT (backfill_id, asset_id, partition_key) DO UPDATE SET reason=excluded.reason, run_id=excluded.run_id`, p.ID, rf.AssetID, pr.Key, pr.Idx, rf.RunID); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET failed=? WHERE id=?`, len(rf.Parts), rf.RunID); err != nil {
				return err
			}
			failed += int64(len(rf.Parts))
		}
		if failed > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE backfills SET partitions_failed=partitions_failed+? WHERE id=?`, failed, p.ID); err != nil {
				return err
			}
		}
		// Queued runs that never started are canceled with the backfill.
		return cancelQueued(ctx, tx, p.ID, p.At)
	}
	return nil
}

func cancelQueued(ctx context.Context, tx *sqlx.Tx, backfillID string, at int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET state='canceled', updated_at=?, finished_at=? WHERE backfill_id=? AND state='queued'`, at, at, backfillID)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		_, err = tx.ExecContext(ctx, `UPDATE backfills SET runs_active=runs_active-?, runs_canceled=runs_canceled+? WHERE id=?`, n, n, backfillID)
	}
	return err
}
