package db

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// Session is a server-side browser session joined with its user.
type Session struct {
	ID         string `db:"id"` // sha256 hex of the cookie secret
	UserID     int64  `db:"user_id"`
	CreatedAt  int64  `db:"created_at"`
	LastSeenAt int64  `db:"last_seen_at"`
	UserName   string `db:"user_name"`
	UserRole   string `db:"user_role"`
	Disabled   bool   `db:"disabled"`
	// UserTimezone is the user's display zone ("" = the browser's).
	UserTimezone string `db:"user_timezone"`
}

// CreateSession records a sign-in.
func (s *Store) CreateSession(ctx context.Context, id string, u User, ip, userAgent string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, user_id, created_at, last_seen_at, ip, user_agent) VALUES (?,?,?,?,?,?)`,
			id, u.ID, Millis(now), Millis(now), ip, userAgent); err != nil {
			return err
		}
		_, err := AppendEvent(ctx, tx, "session.signed_in", userSubject(u.Name), u.Name, map[string]any{"ip": ip}, "", now)
		return err
	})
}

// SessionByID loads a session with its user, or ErrNotFound.
func (s *Store) SessionByID(ctx context.Context, id string) (Session, error) {
	return getRow[Session](ctx, s.r, ErrNotFound, `SELECT s.id, s.user_id, s.created_at, s.last_seen_at, u.name AS user_name, u.role AS user_role, u.disabled, u.timezone AS user_timezone
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`, id)
}

// TouchSession records activity (no event: it is not a state change anyone
// audits).
// While writes fail it is skipped: reading pages must not wait for the
// writer (a locked database would hold every page for the busy timeout).
func (s *Store) TouchSession(ctx context.Context, id string, now time.Time) error {
	return s.touch(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id = ?`, now, id)
}

// touch runs update (time, then id) unless writes are failing.
func (s *Store) touch(ctx context.Context, update string, now time.Time, id any) error {
	if s.WriteHealth().Failing {
		return nil
	}
	_, err := s.writer(ctx).ExecContext(ctx, update, Millis(now), id)
	return s.writeFailed(err)
}

// DeleteSession ends a session; signedOut records a sign-out event (expiry
// cleanup does not).
func (s *Store) DeleteSession(ctx context.Context, id string, signedOut bool, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id); err != nil {
			return err
		}
		if !signedOut {
			return nil
		}
		_, err = AppendEvent(ctx, tx, "session.signed_out", userSubject(name), name, map[string]any{}, "", now)
		return err
	})
}
