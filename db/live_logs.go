package db

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// Live logs across instances (0033_live_instances.sql): the instance
// running a command attempt keeps its output so far in live_logs, so that
// the run page of another instance tails it. Only on PostgreSQL: on
// SQLite these statements are not run (ErrNotPostgres).

// KeepLiveLog stores the output so far of run runID's attempt, running on
// owner, at (Unix ms).
func (s *Store) KeepLiveLog(ctx context.Context, runID string, attempt int64, owner, log string, at int64) error {
	if s.dialect != Postgres {
		return ErrNotPostgres
	}
	_, err := s.writer(ctx).ExecContext(ctx, `INSERT INTO live_logs (run_id, attempt, owner, log, updated_at) VALUES (?,?,?,?,?)
		ON CONFLICT (run_id) DO UPDATE SET attempt=excluded.attempt, owner=excluded.owner, log=excluded.log, updated_at=excluded.updated_at`,
		runID, attempt, owner, log, at)
	return err
}

// DropLiveLog removes run runID's live log of attempt (once the attempt
// ended).
func (s *Store) DropLiveLog(ctx context.Context, runID string, attempt int64) error {
	if s.dialect != Postgres {
		return ErrNotPostgres
	}
	_, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM live_logs WHERE run_id=? AND attempt=?`, runID, attempt)
	return err
}

// LiveLog is the output so far of run runID's running attempt kept by the
// instance running it, and whether there is one.
func (s *Store) LiveLog(ctx context.Context, runID string) (string, bool, error) {
	if s.dialect != Postgres {
		return "", false, nil
	}
	var l string
	err := s.r.GetContext(ctx, &l, `SELECT log FROM live_logs WHERE run_id=?`, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return l, err == nil, err
}

// dropLiveLogTx removes the live log of run runID's attempt inside tx, as
// its log is stored (PostgreSQL only: SQLite never writes one).
func dropLiveLogTx(ctx context.Context, tx *sqlx.Tx, runID string, attempt int64) error {
	if dialectOf(tx) != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM live_logs WHERE run_id=? AND attempt=?`, runID, attempt)
	return err
}
