package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// FailedAttemptsBesides counts run runID's attempts that failed or timed
// out, other than attempt: with the one ending now, they decide whether the
// run retries (max_attempts).
func FailedAttemptsBesides(ctx context.Context, q getter, runID string, attempt int64) (int64, error) {
	var n int64
	err := q.GetContext(ctx, &n, `SELECT COUNT(*) FROM attempts WHERE run_id=? AND state IN ('failed','timeout') AND attempt != ?`, runID, attempt)
	return n, err
}

// SaveAttemptLog stores the (already bounded) output of an attempt inside
// the controller's transaction, replacing a log stored for it before.
func SaveAttemptLog(ctx context.Context, tx *sqlx.Tx, runID string, attempt int64, log string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO attempt_logs (run_id, attempt, log) VALUES (?,?,?) ON CONFLICT (run_id, attempt) DO UPDATE SET log=excluded.log`,
		runID, attempt, log)
	if err != nil {
		return err
	}
	return dropLiveLogTx(ctx, tx, runID, attempt)
}
