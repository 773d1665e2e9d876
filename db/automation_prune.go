package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// PruneBatch is how many rows one pruning statement deletes: each batch is
// its own short transaction, so the writer (which the backfill engine
// shares) is never held for long.
const PruneBatch = 1000

// Pruned is how many rows a pruning deleted.
type Pruned struct {
	Ticks, Evaluations, Events int64
}

// PruneTicks deletes the schedule ticks evaluated before before, batch at
// a time (PruneBatch when batch < 1), oldest first, and counts them in
// their schedule's pruned_ticks in the same transaction. Queued ticks are
// kept (they still launch). Nothing the scheduler decides with is deleted:
// a schedule's last tick is its state's last_tick_at, and a tick's
// backfill keeps the tick id as its idempotency key, so no pruned tick
// launches again. It answers how many it deleted.
func (s *Store) PruneTicks(ctx context.Context, before int64, batch int) (int64, error) {
	key := tickKey(s.dialect)
	pick := `SELECT ` + key + ` FROM schedule_ticks WHERE evaluated_at < ? AND outcome != 'queued' ORDER BY evaluated_at, ` + key + ` LIMIT ?`
	return s.pruneLoop(ctx, batch, func(tx *sqlx.Tx, n int) (int64, error) {
		if _, err := tx.ExecContext(ctx, `UPDATE schedule_state SET pruned_ticks = pruned_ticks + b.n
			FROM (SELECT schedule, COUNT(*) AS n FROM schedule_ticks WHERE `+key+` IN (`+pick+`) GROUP BY schedule) AS b
			WHERE schedule_state.name = b.schedule`, before, n); err != nil {
			return 0, err
		}
		return execCount(ctx, tx, `DELETE FROM schedule_ticks WHERE `+key+` IN (`+pick+`)`, before, n)
	})
}

// PruneSensorHistory deletes the sensor evaluations (evaluations, dry
// runs, resets) started before before and the pushed events received
// before it, batch at a time, counting them in their sensor's
// pruned_evaluations and pruned_events. A pruned event's message id and
// first outcome move to sensor_event_ids, so that the same message id
// still answers as a duplicate and launches nothing. Run keys are never
// pruned: a run key launches at most once per sensor, ever.
func (s *Store) PruneSensorHistory(ctx context.Context, before int64, batch int) (Pruned, error) {
	var p Pruned
	const pickEval = `SELECT id FROM sensor_evaluations WHERE started_at < ? ORDER BY started_at, id LIMIT ?`
	var err error
	p.Evaluations, err = s.pruneLoop(ctx, batch, func(tx *sqlx.Tx, n int) (int64, error) {
		if _, err := tx.ExecContext(ctx, `UPDATE sensor_state SET pruned_evaluations = pruned_evaluations + b.n
			FROM (SELECT sensor, COUNT(*) AS n FROM sensor_evaluations WHERE id IN (`+pickEval+`) GROUP BY sensor) AS b
			WHERE sensor_state.name = b.sensor`, before, n); err != nil {
			return 0, err
		}
		return execCount(ctx, tx, `DELETE FROM sensor_evaluations WHERE id IN (`+pickEval+`)`, before, n)
	})
	if err != nil {
		return p, err
	}
	// sensor_events is WITHOUT ROWID: a batch is picked by its key, the
	// same rows by each statement of the transaction (ordered, and nothing
	// else writes meanwhile).
	const pickEvents = `SELECT sensor, message_id FROM sensor_events WHERE received_at < ? ORDER BY received_at, sensor, message_id LIMIT ?`
	p.Events, err = s.pruneLoop(ctx, batch, func(tx *sqlx.Tx, n int) (int64, error) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sensor_event_ids (sensor, message_id, received_at, outcome, backfill_id)
			SELECT sensor, message_id, received_at, outcome, backfill_id FROM sensor_events WHERE (sensor, message_id) IN (`+pickEvents+`)
			ON CONFLICT (sensor, message_id) DO NOTHING`, before, n); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sensor_state SET pruned_events = pruned_events + b.n
			FROM (SELECT sensor, COUNT(*) AS n FROM (`+pickEvents+`) AS e GROUP BY sensor) AS b
			WHERE sensor_state.name = b.sensor`, before, n); err != nil {
			return 0, err
		}
		return execCount(ctx, tx, `DELETE FROM sensor_events WHERE (sensor, message_id) IN (`+pickEvents+`)`, before, n)
	})
	return p, err
}

// pruneLoop runs step (which deletes at most n rows and answers how many)
// in one transaction per batch until a batch deletes fewer than n or ctx
// ends, and answers the total.
func (s *Store) pruneLoop(ctx context.Context, batch int, step func(tx *sqlx.Tx, n int) (int64, error)) (int64, error) {
	if batch < 1 {
		batch = PruneBatch
	}
	var total int64
	for {
		var n int64
		err := s.Tx(ctx, func(tx *sqlx.Tx) error {
			var err error
			n, err = step(tx, batch)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

func execCount(ctx context.Context, tx *sqlx.Tx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
