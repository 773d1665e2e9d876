package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// BackdateAutomationHistory moves every recorded schedule tick (when it
// was evaluated), sensor evaluation (when it started) and pushed event
// (when it was received) by back in time, as if they had happened that
// much earlier: tests and demonstrations of the retention use it instead
// of waiting. Nothing the scheduler decides with moves (a schedule's last
// tick, the ticks' scheduled times).
func (s *Store) BackdateAutomationHistory(ctx context.Context, by time.Duration) error {
	ms := by.Milliseconds()
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		for _, q := range []string{
			`UPDATE schedule_ticks SET evaluated_at = evaluated_at - ?`,
			`UPDATE sensor_evaluations SET started_at = started_at - ?`,
			`UPDATE sensor_events SET received_at = received_at - ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, ms); err != nil {
				return err
			}
		}
		return nil
	})
}
