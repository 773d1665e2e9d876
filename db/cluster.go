package db

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// Several instances on one database (issue 23): the statements that keep
// them from doing the same work twice. The controller's steps are
// serialized across instances (LockSteps), the attempts a step may finish
// are those still running (AttemptsRunningNow), pool caps and throttles count
// every instance's attempts (AttemptsRunningNow, AttemptStartsSince), and the
// jobs only one instance runs go to the holder of a lease (LeadFor).

// stepLockKey is the PostgreSQL advisory lock the controller's step takes
// ("tessera" in ASCII, so that it collides with no other application's).
const stepLockKey int64 = 0x74657373657261

// LockSteps serializes the controller's steps across instances: the first
// statement of a step's transaction, it waits until no other instance's
// step transaction is open and holds the lock until tx ends. Every read
// the step makes after it sees what the previous steps committed, so a
// chunk is planned once and an attempt started and finished by one
// instance. On SQLite it does nothing: the store's one writer already
// runs one transaction at a time.
func LockSteps(ctx context.Context, tx *sqlx.Tx) error {
	if dialectOf(tx) != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, stepLockKey)
	return err
}

// RunningAttempt is an attempt still running, whoever owns it.
type RunningAttempt struct {
	RunID     string `db:"run_id"`
	Attempt   int64  `db:"attempt"`
	Owner     string `db:"owner"`
	AssetID   int64  `db:"asset_id"`
	StartedAt int64  `db:"started_at"`
}

// AttemptsRunningNow lists the attempts running now, on every instance (the
// partial index attempts_running keeps it to them).
func AttemptsRunningNow(ctx context.Context, q Querier) ([]RunningAttempt, error) {
	return selectAll[RunningAttempt](ctx, q, `SELECT run_id, attempt, owner, COALESCE(asset_id, 0) AS asset_id, started_at FROM attempts WHERE state='running'`)
}

// RunningOwners lists the attempts of the runs runIDs that are running
// now, with their owners: what a step may still finish (by the primary
// key, 500 runs a statement; the state concatenated with an empty string
// keeps SQLite from walking every running attempt through attempts_running
// instead).
func RunningOwners(ctx context.Context, q Querier, runIDs []string) ([]RunningAttempt, error) {
	var out []RunningAttempt
	for len(runIDs) > 0 {
		n := min(len(runIDs), 500)
		rows, err := selectIn[RunningAttempt](ctx, q, `SELECT run_id, attempt, owner, COALESCE(asset_id, 0) AS asset_id, started_at FROM attempts WHERE run_id IN (?) AND state || '' = 'running'`, runIDs[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
		runIDs = runIDs[n:]
	}
	return out, nil
}

// AttemptStartsSince lists the asset and start (Unix ms) of every attempt
// of the assets assetIDs started at since or later, on every instance:
// what a pool's throttle has used of its period.
func AttemptStartsSince(ctx context.Context, q Querier, assetIDs []int64, since int64) ([]RunningAttempt, error) {
	if len(assetIDs) == 0 {
		return nil, nil
	}
	return selectIn[RunningAttempt](ctx, q, `SELECT run_id, attempt, owner, asset_id, started_at FROM attempts
		WHERE asset_id IN (?) AND started_at > 0 AND started_at >= ?`, assetIDs, since)
}

// LeadFor makes owner the holder of lease name until expires (Unix ms)
// when the lease is free, has expired by now or is owner's already, and
// reports whether owner holds it: one upsert, so that of several
// instances asking at once one gets it.
func (s *Store) LeadFor(ctx context.Context, name, owner string, now, expires int64) (bool, error) {
	res, err := s.leaseWriter(ctx).ExecContext(ctx, `INSERT INTO leader (name, owner, expires_at) VALUES (?,?,?)
		ON CONFLICT (name) DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at
		WHERE leader.owner=excluded.owner OR leader.expires_at < ?`, name, owner, expires, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// LeaderOf returns who holds lease name and until when ("" when nobody
// ever did).
func (s *Store) LeaderOf(ctx context.Context, name string) (owner string, expires int64, err error) {
	var row struct {
		Owner   string `db:"owner"`
		Expires int64  `db:"expires_at"`
	}
	err = s.r.GetContext(ctx, &row, `SELECT owner, expires_at FROM leader WHERE name=?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return row.Owner, row.Expires, err
}

// StepDown gives up lease name if owner holds it (a clean shutdown: the
// next instance takes it at once, not after its expiry).
func (s *Store) StepDown(ctx context.Context, name, owner string) error {
	_, err := s.leaseWriter(ctx).ExecContext(ctx, `DELETE FROM leader WHERE name=? AND owner=?`, name, owner)
	return err
}
