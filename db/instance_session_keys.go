package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Session keys of the instances (0035_instance_session_keys.sql): each
// instance on a PostgreSQL store records checks of its session keys (never
// the keys) as it starts, after comparing them with the live instances',
// so that one started with keys the others cannot read refuses to start.

// sessionKeysLockKey is the PostgreSQL advisory lock under which an
// instance compares and records its session keys ("tesskey" in ASCII):
// two instances starting at once are compared with each other.
const sessionKeysLockKey int64 = 0x746573736b6579

// staleSessionKeysAge (ms): the record of an instance that has not
// heartbeated for this long (or never did, recorded this long ago) is
// deleted by the next instance to record its own.
const staleSessionKeysAge = 10 * 60 * 1000

// InstanceSessionKeys are the checks of an instance's session keys.
type InstanceSessionKeys struct {
	Owner   string `db:"owner"`   // the instance's worker id (workers.owner)
	Signing string `db:"signing"` // hex HMAC of the check label under the signing key
	Keys    string `db:"keys"`    // the same under each key, in order, comma-separated
	Since   int64  `db:"since"`   // Unix ms: when the instance recorded them
}

// RecordSessionKeys records k for an instance starting, unless accept
// refuses the session keys of the live instances: those that heartbeated
// at liveCut (Unix ms) or later, and those still starting (recorded at
// startCut or later, no heartbeat yet), oldest first. Comparing and
// recording are one transaction under an advisory lock. When accept
// returns an error, nothing is written and the error is returned as is.
// Records of instances gone for a while are deleted.
func (s *Store) RecordSessionKeys(ctx context.Context, k InstanceSessionKeys, liveCut, startCut int64, accept func(live []InstanceSessionKeys) error) error {
	if s.dialect != Postgres {
		return ErrNotPostgres
	}
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, sessionKeysLockKey); err != nil {
			return err
		}
		live, err := selectAll[InstanceSessionKeys](ctx, tx, `SELECT k.owner, k.signing, k.keys, k.since FROM instance_session_keys k
			LEFT JOIN workers w ON w.owner = k.owner
			WHERE k.owner != ? AND (w.heartbeat_at >= ? OR (w.owner IS NULL AND k.since >= ?)) ORDER BY k.since, k.owner`, k.Owner, liveCut, startCut)
		if err != nil {
			return err
		}
		if err := accept(live); err != nil {
			return err
		}
		stale := k.Since - staleSessionKeysAge
		if _, err := tx.ExecContext(ctx, `DELETE FROM instance_session_keys WHERE since < ? AND owner NOT IN (SELECT owner FROM workers WHERE heartbeat_at >= ?)`, stale, stale); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO instance_session_keys (owner, signing, keys, since) VALUES (?,?,?,?)
			ON CONFLICT (owner) DO UPDATE SET signing=excluded.signing, keys=excluded.keys, since=excluded.since`, k.Owner, k.Signing, k.Keys, k.Since)
		return err
	})
}

// ForgetSessionKeys deletes the record of instance owner's session keys:
// at its clean shutdown, or when its start fails after recording them.
func (s *Store) ForgetSessionKeys(ctx context.Context, owner string) error {
	if s.dialect != Postgres {
		return ErrNotPostgres
	}
	_, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM instance_session_keys WHERE owner=?`, owner)
	return err
}
