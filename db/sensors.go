package db

import (
	"context"
	"errors"

	"github.com/jmoiron/sqlx"
)

// Sensor statuses, event outcomes and evaluation kinds.
const (
	SensorOK    = "ok"
	SensorError = "error"

	EventLaunched = "launched"
	EventSkipped  = "skipped"

	EvalEvaluation = "evaluation"
	EvalDryRun     = "dry_run"
	EvalReset      = "reset"
)

// ErrCursorMoved is the compare-and-set failure of a sensor evaluation:
// the sensor's state changed since the evaluation read it (another
// evaluation, a reset), so it launches nothing and moves nothing.
var ErrCursorMoved = errors.New("the sensor's state changed during the evaluation")

// SensorState is what evaluations, events and operators did with a sensor.
type SensorState struct {
	Name             string  `db:"name" json:"name"`
	Paused           bool    `db:"paused" json:"paused"`
	PausedBy         *string `db:"paused_by" json:"paused_by,omitempty"`
	PausedAt         *int64  `db:"paused_at" json:"paused_at,omitempty"`
	Cursor           *string `db:"cursor" json:"cursor"`
	StateVersion     int64   `db:"state_version" json:"state_version"`
	Status           string  `db:"status" json:"status"`
	LastError        *string `db:"last_error" json:"last_error,omitempty"`
	Failures         int64   `db:"failures" json:"failures"`
	LastEvaluatedAt  *int64  `db:"last_evaluated_at" json:"last_evaluated_at,omitempty"`
	NextEvaluationAt *int64  `db:"next_evaluation_at" json:"next_evaluation_at,omitempty"`
	EventsAccepted   int64   `db:"events_accepted" json:"events_accepted"`
	Launches         int64   `db:"launches" json:"launches"`
	Evaluations      int64   `db:"evaluations" json:"evaluations"`
	// Pruned: evaluations and events older than the retention, deleted
	// (PruneSensorHistory); a pruned event's message id is kept.
	PrunedEvaluations int64 `db:"pruned_evaluations" json:"pruned_evaluations"`
	PrunedEvents      int64 `db:"pruned_events" json:"pruned_events"`
	CreatedAt         int64 `db:"created_at" json:"created_at"`
	UpdatedAt         int64 `db:"updated_at" json:"updated_at"`
}

// SensorEvent is a pushed event's first outcome.
type SensorEvent struct {
	Sensor     string  `db:"sensor" json:"sensor"`
	MessageID  string  `db:"message_id" json:"message_id"`
	ReceivedAt int64   `db:"received_at" json:"received_at"`
	Outcome    string  `db:"outcome" json:"outcome"`
	Reason     *string `db:"reason" json:"reason,omitempty"`
	BackfillID *string `db:"backfill_id" json:"backfill_id,omitempty"`
	Actor      string  `db:"actor" json:"actor"`
	// Pruned: the event is older than the retention; only its message id
	// and first outcome are kept (no reason, no actor), so that it still
	// answers as a duplicate.
	Pruned bool `db:"pruned" json:"pruned,omitempty"`
}

// SensorEvaluation is one recorded evaluation (or dry run, or reset).
type SensorEvaluation struct {
	ID           int64   `db:"id" json:"id"`
	Sensor       string  `db:"sensor" json:"sensor"`
	Kind         string  `db:"kind" json:"kind"`
	StartedAt    int64   `db:"started_at" json:"started_at"`
	DurationMs   int64   `db:"duration_ms" json:"duration_ms"`
	CursorBefore *string `db:"cursor_before" json:"cursor_before"`
	CursorAfter  *string `db:"cursor_after" json:"cursor_after"`
	Requests     string  `db:"requests" json:"requests"` // JSON
	SkipReason   *string `db:"skip_reason" json:"skip_reason,omitempty"`
	Error        *string `db:"error" json:"error,omitempty"`
	LogTail      *string `db:"log_tail" json:"log_tail,omitempty"`
	Actor        string  `db:"actor" json:"actor"`
}

// SensorRunKey is a run_key a sensor launched.
type SensorRunKey struct {
	Sensor     string `db:"sensor" json:"sensor"`
	RunKey     string `db:"run_key" json:"run_key"`
	BackfillID string `db:"backfill_id" json:"backfill_id"`
	CreatedAt  int64  `db:"created_at" json:"created_at"`
}

// EnsureSensorState returns name's state, creating it.
func (s *Store) EnsureSensorState(ctx context.Context, name string, now int64) (SensorState, error) {
	return ensureState(ctx, s, sensorState, name, `INSERT INTO sensor_state (name, created_at, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO NOTHING`, name, now, now)
}

func sensorState(ctx context.Context, q getter, name string) (SensorState, error) {
	return getOne[SensorState](ctx, q, "sensor", name, `SELECT * FROM sensor_state WHERE name=?`, name)
}

// SensorStates maps the name of every sensor the store has seen to its
// state.
func (s *Store) SensorStates(ctx context.Context) (map[string]SensorState, error) {
	return statesByName(ctx, s.r, `SELECT * FROM sensor_state`, func(st SensorState) string { return st.Name })
}

// SensorStateOf returns one sensor's state.
func (s *Store) SensorStateOf(ctx context.Context, name string) (SensorState, error) {
	return sensorState(ctx, s.r, name)
}

// SensorEventOf returns the first outcome of a pushed event (ErrNotFound
// when the message id is new).
func (s *Store) SensorEventOf(ctx context.Context, sensor, messageID string) (SensorEvent, error) {
	return sensorEvent(ctx, s.r, sensor, messageID)
}

// sensorEvent is a message id's first outcome: its event, or what is kept
// of it once pruned (sensor_event_ids), so that the message id answers as
// a duplicate for ever.
func sensorEvent(ctx context.Context, q getter, sensor, messageID string) (SensorEvent, error) {
	return getRow[SensorEvent](ctx, q, ErrNotFound, `SELECT sensor, message_id, received_at, outcome, reason, backfill_id, actor, 0 AS pruned FROM sensor_events WHERE sensor=? AND message_id=?
		UNION ALL SELECT sensor, message_id, received_at, outcome, NULL AS reason, backfill_id, '' AS actor, 1 AS pruned
		FROM sensor_event_ids WHERE sensor=? AND message_id=? LIMIT 1`, sensor, messageID, sensor, messageID)
}

// RecordSensorEventTx records a pushed event in tx unless its message id
// was recorded already, and answers the event stored (the first one) and
// whether it is this one.
func RecordSensorEventTx(ctx context.Context, tx *sqlx.Tx, ev SensorEvent) (SensorEvent, bool, error) {
	// The sensor's state is created with its first event, not before: a
	// refused event writes nothing.
	if _, err := tx.ExecContext(ctx, `INSERT INTO sensor_state (name, created_at, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO NOTHING`,
		ev.Sensor, ev.ReceivedAt, ev.ReceivedAt); err != nil {
		return ev, false, err
	}
	// A message id whose event was pruned is a duplicate too.
	if first, err := sensorEvent(ctx, tx, ev.Sensor, ev.MessageID); err == nil {
		return first, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return ev, false, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO sensor_events (sensor, message_id, received_at, outcome, reason, backfill_id, actor) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT (sensor, message_id) DO NOTHING`, ev.Sensor, ev.MessageID, ev.ReceivedAt, ev.Outcome, ev.Reason, ev.BackfillID, ev.Actor)
	if err != nil {
		return ev, false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		first, err := sensorEvent(ctx, tx, ev.Sensor, ev.MessageID)
		return first, false, err
	}
	launched := int64(0)
	if ev.Outcome == EventLaunched {
		launched = 1
	}
	_, err = tx.ExecContext(ctx, `UPDATE sensor_state SET events_accepted=events_accepted+1, launches=launches+?, updated_at=? WHERE name=?`,
		launched, ev.ReceivedAt, ev.Sensor)
	return ev, true, err
}

// SensorEventCursor is where a page of pushed events ends: the last
// event's received_at and message_id (events received in the same
// millisecond are ordered by message id, so none is skipped or repeated).
type SensorEventCursor struct {
	ReceivedAt int64
	MessageID  string
}

// SensorEvents lists a sensor's pushed events, newest first, after the
// page that ended at before (nil: from the newest), at most limit.
func (s *Store) SensorEvents(ctx context.Context, sensor string, before *SensorEventCursor, limit int) ([]SensorEvent, error) {
	q, args := `SELECT * FROM sensor_events WHERE sensor=?`, []any{sensor}
	if before != nil {
		q += ` AND (received_at < ? OR (received_at = ? AND message_id < ?))`
		args = append(args, before.ReceivedAt, before.ReceivedAt, before.MessageID)
	}
	return selectAll[SensorEvent](ctx, s.r, q+` ORDER BY received_at DESC, message_id DESC LIMIT ?`, append(args, limit)...)
}

// UsedRunKeys answers which of keys sensor has launched already.
func (s *Store) UsedRunKeys(ctx context.Context, sensor string, keys []string) (map[string]bool, error) {
	used := map[string]bool{}
	if len(keys) == 0 {
		return used, nil
	}
	got, err := selectIn[string](ctx, s.r, `SELECT run_key FROM sensor_run_keys WHERE sensor=? AND run_key IN (?)`, sensor, keys)
	if err != nil {
		return nil, err
	}
	for _, k := range got {
		used[k] = true
	}
	return used, nil
}

// RecordRunKeyTx records that sensor launched run key with backfill; it
// fails (aborting tx) when the key was used already.
func RecordRunKeyTx(ctx context.Context, tx *sqlx.Tx, k SensorRunKey) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO sensor_run_keys (sensor, run_key, backfill_id, created_at) VALUES (?,?,?,?)`, k.Sensor, k.RunKey, k.BackfillID, k.CreatedAt)
	if isUniqueViolation(err) {
		return ErrCursorMoved
	}
	return err
}

// SensorRunKeys lists a sensor's used run keys that start with prefix,
// after after (in key order), at most limit.
func (s *Store) SensorRunKeys(ctx context.Context, sensor, prefix, after string, limit int) ([]SensorRunKey, error) {
	return selectAll[SensorRunKey](ctx, s.r, `SELECT * FROM sensor_run_keys WHERE sensor=? AND run_key > ? AND substr(run_key, 1, length(?)) = ? ORDER BY run_key LIMIT ?`,
		sensor, after, prefix, prefix, limit)
}

// FinishEvaluationTx ends a successful evaluation in tx: the cursor moves
// to cursor, with a compare-and-set on the state version the evaluation
// read (ErrCursorMoved when it changed), the sensor is OK again, and the
// evaluation is recorded; it answers the evaluation's id.
func FinishEvaluationTx(ctx context.Context, tx *sqlx.Tx, readVersion int64, launched int64, next int64, ev SensorEvaluation) (int64, error) {
	res, err := tx.ExecContext(ctx, `UPDATE sensor_state SET cursor=?, state_version=state_version+1, status='ok', last_error=NULL, failures=0,
		last_evaluated_at=?, next_evaluation_at=?, launches=launches+?, evaluations=evaluations+1, updated_at=? WHERE name=? AND state_version=?`,
		ev.CursorAfter, ev.StartedAt, next, launched, ev.StartedAt, ev.Sensor, readVersion)
	if err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, ErrCursorMoved
	}
	return insertEvaluation(ctx, tx, ev)
}

// insertEvaluation records ev and answers its id.
func insertEvaluation(ctx context.Context, tx *sqlx.Tx, ev SensorEvaluation) (int64, error) {
	return insertID(ctx, tx, `INSERT INTO sensor_evaluations (sensor, kind, started_at, duration_ms, cursor_before, cursor_after, requests, skip_reason, error, log_tail, actor)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)`, ev.Sensor, ev.Kind, ev.StartedAt, ev.DurationMs, ev.CursorBefore, ev.CursorAfter, ev.Requests, ev.SkipReason, ev.Error, ev.LogTail, ev.Actor)
}

// FailEvaluation records a failed evaluation: the cursor stays, the
// sensor shows ERROR with the message, and its next evaluation waits
// until next (the caller's backoff). It answers the evaluation's id.
func (s *Store) FailEvaluation(ctx context.Context, next int64, ev SensorEvaluation) (id int64, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sensor_state SET status='error', last_error=?, failures=failures+1, last_evaluated_at=?,
			next_evaluation_at=?, evaluations=evaluations+1, updated_at=? WHERE name=?`, ev.Error, ev.StartedAt, next, ev.StartedAt, ev.Sensor); err != nil {
			return err
		}
		id, err = insertEvaluation(ctx, tx, ev)
		return err
	})
	return id, err
}

// RecordDryRun records a dry run: nothing else changes. It answers the
// evaluation's id.
func (s *Store) RecordDryRun(ctx context.Context, ev SensorEvaluation) (id int64, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		id, err = insertEvaluation(ctx, tx, ev)
		return err
	})
	return id, err
}

// ResetSensorCursor sets a sensor's cursor (nil: none) and records who did
// it; it moves the state version, so an evaluation in flight launches
// nothing.
func (s *Store) ResetSensorCursor(ctx context.Context, name string, cursor *string, actor string, now int64) (SensorState, error) {
	var st SensorState
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		before, err := sensorState(ctx, tx, name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sensor_state SET cursor=?, state_version=state_version+1, updated_at=? WHERE name=?`, cursor, now, name); err != nil {
			return err
		}
		if _, err := insertEvaluation(ctx, tx, SensorEvaluation{Sensor: name, Kind: EvalReset, StartedAt: now, CursorBefore: before.Cursor, CursorAfter: cursor,
			Requests: "[]", Actor: actor}); err != nil {
			return err
		}
		st, err = sensorState(ctx, tx, name)
		return err
	})
	return st, err
}

// SetSensorPaused pauses or resumes a sensor; changed is false when it
// was so already.
func (s *Store) SetSensorPaused(ctx context.Context, name string, paused bool, actor string, now int64) (SensorState, bool, error) {
	return setPaused(ctx, s, sensorState, func(st SensorState) bool { return st.Paused },
		`UPDATE sensor_state SET paused=?, paused_by=?, paused_at=?, next_evaluation_at=NULL, updated_at=? WHERE name=?`,
		name, paused, actor, now)
}

// SensorEvaluations lists a sensor's evaluations newest first, with id
// below before (0: any), at most limit.
func (s *Store) SensorEvaluations(ctx context.Context, sensor string, before int64, limit int) ([]SensorEvaluation, error) {
	q, args := `SELECT * FROM sensor_evaluations WHERE sensor=?`, []any{sensor}
	if before > 0 {
		q += ` AND id < ?`
		args = append(args, before)
	}
	return selectAll[SensorEvaluation](ctx, s.r, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
}
