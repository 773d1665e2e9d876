package db

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Tick outcomes.
const (
	TickLaunched = "launched"
	TickQueued   = "queued"
	TickSkipped  = "skipped"
	TickFailed   = "failed"
)

// ScheduleState is what the scheduler and the operators did with one
// schedule of the workspace.
type ScheduleState struct {
	Name           string  `db:"name" json:"name"`
	Paused         bool    `db:"paused" json:"paused"`
	PausedBy       *string `db:"paused_by" json:"paused_by,omitempty"`
	PausedAt       *int64  `db:"paused_at" json:"paused_at,omitempty"`
	LastTickAt     int64   `db:"last_tick_at" json:"last_tick_at"`
	LastBackfillID *string `db:"last_backfill_id" json:"last_backfill_id,omitempty"`
	StateVersion   int64   `db:"state_version" json:"state_version"`
	TicksLaunched  int64   `db:"ticks_launched" json:"ticks_launched"`
	TicksSkipped   int64   `db:"ticks_skipped" json:"ticks_skipped"`
	TicksFailed    int64   `db:"ticks_failed" json:"ticks_failed"`
	PrunedTicks    int64   `db:"pruned_ticks" json:"pruned_ticks"` // ticks older than the retention, deleted (PruneTicks)
	CreatedAt      int64   `db:"created_at" json:"created_at"`
	UpdatedAt      int64   `db:"updated_at" json:"updated_at"`
}

// Tick is one evaluated tick of a schedule.
type Tick struct {
	ID             string  `db:"id" json:"id"`
	Schedule       string  `db:"schedule" json:"schedule"`
	ScheduledFor   int64   `db:"scheduled_for" json:"scheduled_for"`
	EvaluatedAt    int64   `db:"evaluated_at" json:"evaluated_at"`
	Outcome        string  `db:"outcome" json:"outcome"`
	Reason         *string `db:"reason" json:"reason,omitempty"`
	DefinitionHash string  `db:"definition_hash" json:"definition_hash"`
	BackfillID     *string `db:"backfill_id" json:"backfill_id,omitempty"`
	Manual         bool    `db:"manual" json:"manual"`
	Actor          string  `db:"actor" json:"actor"`
}

// ScheduleStates maps the name of every schedule the store has seen to its
// state.
func (s *Store) ScheduleStates(ctx context.Context) (map[string]ScheduleState, error) {
	return statesByName(ctx, s.r, `SELECT * FROM schedule_state`, func(st ScheduleState) string { return st.Name })
}

// ScheduleStateOf returns one schedule's state (ErrNotFound: never seen).
func (s *Store) ScheduleStateOf(ctx context.Context, name string) (ScheduleState, error) {
	return scheduleState(ctx, s.r, name)
}

func scheduleState(ctx context.Context, q getter, name string) (ScheduleState, error) {
	return getOne[ScheduleState](ctx, q, "schedule", name, `SELECT * FROM schedule_state WHERE name=?`, name)
}

// EnsureScheduleState returns name's state, creating it with no tick owed
// before now (a new schedule does not launch the past).
func (s *Store) EnsureScheduleState(ctx context.Context, name string, now int64) (ScheduleState, error) {
	return ensureState(ctx, s, scheduleState, name, `INSERT INTO schedule_state (name, last_tick_at, created_at, updated_at) VALUES (?,?,?,?)
		ON CONFLICT (name) DO NOTHING`, name, now, now, now)
}

// RecordTick records one evaluated tick and moves its schedule's state on
// in the same transaction: a scheduled (not manual) tick advances
// last_tick_at to its time, a launched one becomes the schedule's last
// backfill, and the counters follow the outcome. A tick recorded before
// (the same id) is left as it was unless it was queued: a queued tick is
// recorded again when it launches. It answers whether it wrote the tick.
func (s *Store) RecordTick(ctx context.Context, t Tick) (bool, error) {
	wrote := false
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		wrote, err = recordTick(ctx, tx, t)
		return err
	})
	return wrote, err
}

// RecordTickTx is RecordTick in tx (with the backfill the tick created).
func RecordTickTx(ctx context.Context, tx *sqlx.Tx, t Tick) (bool, error) {
	return recordTick(ctx, tx, t)
}

func recordTick(ctx context.Context, tx *sqlx.Tx, t Tick) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO schedule_ticks (id, schedule, scheduled_for, evaluated_at, outcome, reason, definition_hash, backfill_id, manual, actor)
		VALUES (?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET evaluated_at=excluded.evaluated_at, outcome=excluded.outcome, reason=excluded.reason,
			backfill_id=excluded.backfill_id, definition_hash=excluded.definition_hash
		WHERE schedule_ticks.outcome = 'queued'`,
		t.ID, t.Schedule, t.ScheduledFor, t.EvaluatedAt, t.Outcome, t.Reason, t.DefinitionHash, t.BackfillID, t.Manual, t.Actor)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	var launched, skipped, failed int64
	switch t.Outcome {
	case TickLaunched:
		launched = 1
	case TickSkipped:
		skipped = 1
	case TickFailed:
		failed = 1
	}
	last := int64(0)
	if !t.Manual {
		last = t.ScheduledFor
	}
	_, err = tx.ExecContext(ctx, `UPDATE schedule_state SET last_tick_at = `+greatest(dialectOf(tx))+`(last_tick_at, ?),
		last_backfill_id = COALESCE(?, last_backfill_id), ticks_launched = ticks_launched + ?, ticks_skipped = ticks_skipped + ?,
		ticks_failed = ticks_failed + ?, state_version = state_version + 1, updated_at = ? WHERE name = ?`,
		last, t.BackfillID, launched, skipped, failed, t.EvaluatedAt, t.Schedule)
	return true, err
}

// SkippedTicks are ticks of one schedule recorded as skipped for one
// reason: Listed one row each, Counted more (older, not listed) whose
// newest was CountedLast.
type SkippedTicks struct {
	Schedule, Reason, DefinitionHash string
	Listed                           []int64 // scheduled_for of each, oldest first
	Counted                          int64
	CountedLast                      int64
	At                               int64
}

// RecordSkippedTicks records many skipped ticks in one transaction and
// advances the schedule past them.
func (s *Store) RecordSkippedTicks(ctx context.Context, k SkippedTicks) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		reason := k.Reason
		for _, at := range k.Listed {
			t := Tick{ID: fmt.Sprintf("%s:%d", k.Schedule, at/1000), Schedule: k.Schedule, ScheduledFor: at, EvaluatedAt: k.At,
				Outcome: TickSkipped, Reason: &reason, DefinitionHash: k.DefinitionHash, Actor: "scheduler"}
			if _, err := recordTick(ctx, tx, t); err != nil {
				return err
			}
		}
		if k.Counted > 0 {
			_, err := tx.ExecContext(ctx, `UPDATE schedule_state SET last_tick_at = `+greatest(dialectOf(tx))+`(last_tick_at, ?), ticks_skipped = ticks_skipped + ?,
				state_version = state_version + 1, updated_at = ? WHERE name = ?`, k.CountedLast, k.Counted, k.At, k.Schedule)
			return err
		}
		return nil
	})
}

// AdvanceSchedule moves a schedule's last tick to at without recording
// ticks (a schedule disabled in the workspace owes nothing for its time
// off).
func (s *Store) AdvanceSchedule(ctx context.Context, name string, at int64) error {
	_, err := s.writer(ctx).ExecContext(ctx, `UPDATE schedule_state SET last_tick_at = `+greatest(s.dialect)+`(last_tick_at, ?) WHERE name = ?`, at, name)
	return err
}

// SetSchedulePaused pauses or resumes a schedule. It answers the state
// after, and whether it changed (pausing a paused schedule changes
// nothing).
func (s *Store) SetSchedulePaused(ctx context.Context, name string, paused bool, actor string, now int64) (ScheduleState, bool, error) {
	return setPaused(ctx, s, scheduleState, func(st ScheduleState) bool { return st.Paused },
		`UPDATE schedule_state SET paused=?, paused_by=?, paused_at=?, state_version=state_version+1, updated_at=? WHERE name=?`,
		name, paused, actor, now)
}

// TickCursor is where a page of ticks (newest first) ends.
type TickCursor struct {
	ScheduledFor int64
	ID           string
}

// ScheduleTicks lists a schedule's ticks newest first, after (older than)
// cursor when it is not nil, with outcome one of outcomes (all when
// empty).
func (s *Store) ScheduleTicks(ctx context.Context, name string, cursor *TickCursor, outcomes []string, limit int) ([]Tick, error) {
	q := `SELECT * FROM schedule_ticks WHERE schedule=?`
	args := []any{name}
	if cursor != nil {
		q += ` AND (scheduled_for, id) < (?, ?)`
		args = append(args, cursor.ScheduledFor, cursor.ID)
	}
	q, args = andIn(q, args, "outcome", outcomes)
	q += ` ORDER BY scheduled_for DESC, id DESC LIMIT ?`
	return selectAll[Tick](ctx, s.r, q, append(args, limit)...)
}

// SchedulesWithQueuedTicks names the schedules that have a queued tick (one
// query on the partial index of queued ticks, for every schedule).
func (s *Store) SchedulesWithQueuedTicks(ctx context.Context) (map[string]bool, error) {
	var names []string
	if err := s.r.SelectContext(ctx, &names, `SELECT DISTINCT schedule FROM schedule_ticks WHERE outcome='queued'`); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// QueuedTicks lists a schedule's queued ticks, oldest first.
func (s *Store) QueuedTicks(ctx context.Context, name string) ([]Tick, error) {
	return selectAll[Tick](ctx, s.r, `SELECT * FROM schedule_ticks WHERE schedule=? AND outcome='queued' ORDER BY scheduled_for, id`, name)
}
