package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// ErrDuplicateUser is returned when a user name is taken (names are
// case-insensitive).
var ErrDuplicateUser = errors.New("a user with that name already exists")

// User is an account. Role is "viewer", "operator" or "admin".
type User struct {
	ID           int64  `db:"id"`
	Name         string `db:"name"`
	Role         string `db:"role"`
	PasswordHash string `db:"password_hash"`
	Disabled     bool   `db:"disabled"`
	CreatedAt    int64  `db:"created_at"`
	UpdatedAt    int64  `db:"updated_at"`
	// Timezone is the zone the user reads times in (IANA name); "" = the
	// browser's zone.
	Timezone string `db:"timezone"`
}

// CountUsers counts every account, disabled ones included.
func (s *Store) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM users`)
	return n, err
}

// CreateUser inserts a user and its event. The caller validates name, role
// and hashes the password.
func (s *Store) CreateUser(ctx context.Context, name, role, passwordHash, actor string, now time.Time) (User, error) {
	return s.CreateUserKeyed(ctx, name, role, passwordHash, actor, "", now)
}

// CreateUserKeyed is CreateUser with an idempotency key (API creates): the
// key is the user.created event's, so a second create with it fails with
// ErrDuplicateEvent and writes nothing.
func (s *Store) CreateUserKeyed(ctx context.Context, name, role, passwordHash, actor, idemKey string, now time.Time) (User, error) {
	u := User{Name: name, Role: role, PasswordHash: passwordHash, CreatedAt: Millis(now), UpdatedAt: Millis(now)}
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		u.ID, err = insertID(ctx, tx, `INSERT INTO users (name, role, password_hash, created_at, updated_at) VALUES (?,?,?,?,?)`,
			name, role, passwordHash, u.CreatedAt, u.UpdatedAt)
		if err != nil {
			if isUniqueViolation(err) {
				return ErrDuplicateUser
			}
			return err
		}
		_, err = AppendEvent(ctx, tx, "user.created", userSubject(name), actor, map[string]any{"role": role}, idemKey, now)
		return err
	})
	return u, err
}

// CreateFirstAdmin creates name as admin only when there are no users at all,
// in one transaction; created is false when users already exist.
func (s *Store) CreateFirstAdmin(ctx context.Context, name, passwordHash string, now time.Time) (created bool, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		var n int64
		if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM users`); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		// Instances started together on a new PostgreSQL database may each
		// count no user: the one whose insert lands creates the admin, the
		// others' do nothing (ON CONFLICT) and they go on without.
		res, err := tx.ExecContext(ctx, `INSERT INTO users (name, role, password_hash, created_at, updated_at) VALUES (?,?,?,?,?)
			ON CONFLICT DO NOTHING`, name, "admin", passwordHash, Millis(now), Millis(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		created = true
		_, err = AppendEvent(ctx, tx, "user.created", userSubject(name), "system", map[string]any{"role": "admin", "first_admin": true}, "", now)
		return err
	})
	return created, err
}

// UserByName finds a user by name (case-insensitive) or returns ErrNotFound.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	return getRow[User](ctx, s.r, fmt.Errorf("user %q: %w", name, ErrNotFound), `SELECT * FROM users WHERE name = ?`, name)
}

// UserByID finds a user by id or returns ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	return getRow[User](ctx, s.r, fmt.Errorf("user %d: %w", id, ErrNotFound), `SELECT * FROM users WHERE id = ?`, id)
}

// ListUsers lists every user by name.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	return selectAll[User](ctx, s.r, `SELECT * FROM users ORDER BY name`)
}

// SetUserRole changes a user's role; it applies to existing sessions and
// tokens on their next request.
func (s *Store) SetUserRole(ctx context.Context, id int64, role, actor string, now time.Time) error {
	return s.updateUser(ctx, id, "user.role_changed", map[string]any{"role": role}, actor, now,
		`UPDATE users SET role = ?, updated_at = ? WHERE id = ?`, role, Millis(now), id)
}

// SetUserDisabled disables (ending every session at once) or re-enables a user.
func (s *Store) SetUserDisabled(ctx context.Context, id int64, disabled bool, actor string, now time.Time) error {
	typ := "user.enabled"
	if disabled {
		typ = "user.disabled"
	}
	return s.updateUser(ctx, id, typ, map[string]any{}, actor, now,
		`UPDATE users SET disabled = ?, updated_at = ? WHERE id = ?`, disabled, Millis(now), id)
}

// SetUserPassword replaces a user's password hash and ends their sessions.
func (s *Store) SetUserPassword(ctx context.Context, id int64, passwordHash, actor string, now time.Time) error {
	return s.updateUser(ctx, id, "user.password_reset", map[string]any{}, actor, now,
		`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, passwordHash, Millis(now), id)
}

// updateUser runs one user update, its event and, for anything but a role
// change, ends the user's sessions.
func (s *Store) updateUser(ctx context.Context, id int64, typ string, payload map[string]any, actor string, now time.Time, q string, args ...any) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		name, err := userName(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
		if typ == "user.disabled" || typ == "user.password_reset" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, id); err != nil {
				return err
			}
		}
		_, err = AppendEvent(ctx, tx, typ, userSubject(name), actor, payload, "", now)
		return err
	})
}

// SetUserTimezone stores the zone user id reads times in ("" = the
// browser's); the caller has checked the name. No event: it is a display
// preference, like a session's last use.
func (s *Store) SetUserTimezone(ctx context.Context, id int64, zone string, now time.Time) error {
	res, err := s.writer(ctx).ExecContext(ctx, `UPDATE users SET timezone = ?, updated_at = ? WHERE id = ?`, zone, Millis(now), id)
	if err != nil {
		return s.writeFailed(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	return nil
}

// UserTimezone is the zone user id reads times in ("" = the browser's).
func (s *Store) UserTimezone(ctx context.Context, id int64) (string, error) {
	var zone string
	err := s.r.GetContext(ctx, &zone, `SELECT timezone FROM users WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	return zone, err
}

// userName is the name of user id (ErrNotFound when there is none).
func userName(ctx context.Context, tx *sqlx.Tx, id int64) (string, error) {
	var name string
	if err := tx.GetContext(ctx, &name, `SELECT name FROM users WHERE id = ?`, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("user %d: %w", id, ErrNotFound)
		}
		return "", err
	}
	return name, nil
}

func userSubject(name string) string { return "user:" + name }

// ChangeOwnPassword replaces a user's password hash at their own request and
// ends their other sessions; keepSession (the session making the change)
// stays signed in.
func (s *Store) ChangeOwnPassword(ctx context.Context, id int64, passwordHash, keepSession, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		name, err := userName(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, passwordHash, Millis(now), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ? AND id != ?`, id, keepSession)
		if err != nil {
			return err
		}
		ended, _ := res.RowsAffected()
		_, err = AppendEvent(ctx, tx, "user.password_changed", userSubject(name), actor, map[string]any{"other_sessions_ended": ended}, "", now)
		return err
	})
}

// AccountCountsForTest counts the users, the API tokens and the events:
// what an account request could write, for the tests of accounts
// (testkit.Env.AccountCounts); nothing else may call it.
func (s *Store) AccountCountsForTest() (users, tokens, events int, err error) {
	var row struct {
		Users  int `db:"users"`
		Tokens int `db:"tokens"`
		Events int `db:"events"`
	}
	err = s.r.Get(&row, `SELECT (SELECT COUNT(*) FROM users) AS users, (SELECT COUNT(*) FROM api_tokens) AS tokens, (SELECT COUNT(*) FROM events) AS events`)
	return row.Users, row.Tokens, row.Events, err
}
