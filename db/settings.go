package db

import (
	"context"
	"database/sql"
	"errors"
)

// RunIDSecret returns the stored secret that run ids are derived from
// (hex); ok is false while none is stored.
func (s *Store) RunIDSecret(ctx context.Context) (secret string, ok bool, err error) {
	err = s.r.GetContext(ctx, &secret, `SELECT value FROM settings WHERE name='run_id_secret'`)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return secret, err == nil, err
}

// KeepRunIDSecret stores candidate as the run id secret unless one is
// stored already (another process may have stored its own first), and
// returns the secret that is stored, read from the writer.
func (s *Store) KeepRunIDSecret(ctx context.Context, candidate string) (string, error) {
	if _, err := s.writer(ctx).ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('run_id_secret', ?) ON CONFLICT DO NOTHING`, candidate); err != nil {
		return "", err
	}
	var v string
	err := s.writer(ctx).GetContext(ctx, &v, `SELECT value FROM settings WHERE name='run_id_secret'`)
	return v, err
}
