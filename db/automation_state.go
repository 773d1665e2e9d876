package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// The state rows of the automations (schedule_state, sensor_state) are read
// and written alike: one row a name, created on first use, paused and
// resumed by an operator.

// statesByName maps the name (by name) of every automation state query
// reads to its state.
func statesByName[T any](ctx context.Context, q getter, query string, name func(T) string) (map[string]T, error) {
	rows, err := selectAll[T](ctx, q, query)
	if err != nil {
		return nil, err
	}
	return IndexBy(rows, name), nil
}

// ensureState returns the state of the automation named name, which read
// reads, after insert (with args) created its row when it had none, in one
// transaction.
func ensureState[T any](ctx context.Context, s *Store, read func(context.Context, getter, string) (T, error), name, insert string, args ...any) (st T, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
			return err
		}
		st, err = read(ctx, tx, name)
		return err
	})
	return st, err
}

// setPaused pauses or resumes the automation named name (a schedule, a
// sensor) whose state read reads and isPaused tells: update sets paused,
// paused_by, paused_at (the actor and now, or NULL on resume), what else the
// automation changes then, and updated_at, of the row of that name. It
// answers the state after and whether it changed (pausing a paused one
// changes nothing).
func setPaused[T any](ctx context.Context, s *Store, read func(context.Context, getter, string) (T, error), isPaused func(T) bool,
	update, name string, paused bool, actor string, now int64) (st T, changed bool, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		if st, err = read(ctx, tx, name); err != nil || isPaused(st) == paused {
			return err
		}
		var by *string
		var at *int64
		if paused {
			by, at = &actor, &now
		}
		if _, err := tx.ExecContext(ctx, update, paused, by, at, now, name); err != nil {
			return err
		}
		changed = true
		st, err = read(ctx, tx, name)
		return err
	})
	return st, changed, err
}
