package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Token is an API token (the secret itself is never stored).
type Token struct {
	ID         int64   `db:"id"`
	UserID     int64   `db:"user_id"`
	Name       string  `db:"name"`
	Prefix     string  `db:"prefix"`
	Hash       string  `db:"hash"`
	Role       *string `db:"role"` // nil: the user's role
	CreatedAt  int64   `db:"created_at"`
	LastUsedAt *int64  `db:"last_used_at"`
	RevokedAt  *int64  `db:"revoked_at"`
	ExpiresAt  *int64  `db:"expires_at"` // nil: never
	UserName   string  `db:"user_name"`
	UserRole   string  `db:"user_role"`
	Disabled   bool    `db:"disabled"`
}

const tokenSelect = `SELECT t.id, t.user_id, t.name, t.prefix, t.hash, t.role, t.created_at, t.last_used_at, t.revoked_at, t.expires_at,
	u.name AS user_name, u.role AS user_role, u.disabled FROM api_tokens t JOIN users u ON u.id = t.user_id`

// CreateToken stores a token's hash; role may be empty for the user's role,
// expires nil for a token that never expires.
func (s *Store) CreateToken(ctx context.Context, userID int64, name, prefix, hash, role string, expires *time.Time, actor string, now time.Time) (Token, error) {
	return s.CreateTokenKeyed(ctx, userID, name, prefix, hash, role, expires, actor, "", now)
}

// CreateTokenKeyed is CreateToken with an idempotency key (API creates).
func (s *Store) CreateTokenKeyed(ctx context.Context, userID int64, name, prefix, hash, role string, expires *time.Time, actor, idemKey string, now time.Time) (Token, error) {
	var r *string
	if role != "" {
		r = &role
	}
	t := Token{UserID: userID, Name: name, Prefix: prefix, Hash: hash, Role: r, CreatedAt: Millis(now)}
	payload := map[string]any{"name": name, "role": role}
	if expires != nil {
		ms := Millis(*expires)
		t.ExpiresAt = &ms
		payload["expires_at"] = expires.UTC().Format(time.RFC3339)
	}
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &t.UserName, `SELECT name FROM users WHERE id = ?`, userID); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("user %d: %w", userID, ErrNotFound)
			}
			return err
		}
		var err error
		t.ID, err = insertID(ctx, tx, `INSERT INTO api_tokens (user_id, name, prefix, hash, role, created_at, expires_at) VALUES (?,?,?,?,?,?,?)`,
			userID, name, prefix, hash, r, t.CreatedAt, t.ExpiresAt)
		if err != nil {
			return err
		}
		payload["token_id"] = t.ID
		_, err = AppendEvent(ctx, tx, "token.created", userSubject(t.UserName), actor, payload, idemKey, now)
		return err
	})
	return t, err
}

// TokenByHash finds a token (revoked ones included) or returns ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash string) (Token, error) {
	var t Token
	err := s.r.GetContext(ctx, &t, tokenSelect+` WHERE t.hash = ?`, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// TokenByID finds a token or returns ErrNotFound.
func (s *Store) TokenByID(ctx context.Context, id int64) (Token, error) {
	var t Token
	err := s.r.GetContext(ctx, &t, tokenSelect+` WHERE t.id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("token %d: %w", id, ErrNotFound)
	}
	return t, err
}

// ListTokens lists tokens, newest first; userID 0 lists every user's.
func (s *Store) ListTokens(ctx context.Context, userID int64) ([]Token, error) {
	var out []Token
	var err error
	if userID == 0 {
		err = s.r.SelectContext(ctx, &out, tokenSelect+` ORDER BY t.id DESC`)
	} else {
		err = s.r.SelectContext(ctx, &out, tokenSelect+` WHERE t.user_id = ? ORDER BY t.id DESC`, userID)
	}
	return out, err
}

// TouchToken records a use.
// While writes fail it is skipped (see TouchSession).
func (s *Store) TouchToken(ctx context.Context, id int64, now time.Time) error {
	return s.touch(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, now, id)
}

// RevokeToken revokes a token at once; revoking twice is a no-op.
func (s *Store) RevokeToken(ctx context.Context, id int64, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		var t Token
		if err := tx.GetContext(ctx, &t, tokenSelect+` WHERE t.id = ?`, id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("token %d: %w", id, ErrNotFound)
			}
			return err
		}
		if t.RevokedAt != nil {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ?`, Millis(now), id); err != nil {
			return err
		}
		_, err := AppendEvent(ctx, tx, "token.revoked", userSubject(t.UserName), actor, map[string]any{"token_id": id, "name": t.Name}, "", now)
		return err
	})
}
