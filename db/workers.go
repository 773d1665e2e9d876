package db

import "context"

// Workers: every server process that runs attempts heartbeats a row of the
// workers table; a running attempt is leased by its owner until the owner
// stops heartbeating (0003_backfills.sql). These are the engine's lease
// statements.

// Heartbeat records that worker owner is alive at (Unix ms), registering it
// on its first beat. It runs outside the controller's step transaction,
// once per heartbeat interval; on PostgreSQL on a connection of its own
// (leaseWriter), never behind a step waiting for the other instances'.
func (s *Store) Heartbeat(ctx context.Context, owner string, at int64) error {
	_, err := s.leaseWriter(ctx).ExecContext(ctx, `INSERT INTO workers (owner, started_at, heartbeat_at) VALUES (?,?,?)
		ON CONFLICT (owner) DO UPDATE SET heartbeat_at=excluded.heartbeat_at`, owner, at, at)
	if ctx.Err() == nil {
		s.noteReach(err)
	}
	if err != nil && s.leases != nil {
		// The lease pool's one connection may be the one a restart of
		// the server ended: the next heartbeat dials a new one rather than
		// fail on it again (the fault banner lasts until one succeeds).
		s.leases.SetMaxIdleConns(0)
		s.leases.SetMaxIdleConns(1)
	}
	return err
}

// RemoveWorker forgets worker owner at a clean shutdown: its attempts that
// are still running then count as expired at once for the next server,
// whatever the lease TTL.
func (s *Store) RemoveWorker(ctx context.Context, owner string) error {
	_, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM workers WHERE owner=?`, owner)
	return err
}

// ExpiredAttempts lists the running attempts whose lease has expired: owned
// by another worker than self that never heartbeated or last did before cut
// (Unix ms). The partial index attempts_running (state = 'running') keeps
// this scan to the running attempts, however long the history.
func (s *Store) ExpiredAttempts(ctx context.Context, self string, cut int64) ([]Attempt, error) {
	return selectAll[Attempt](ctx, s.r, `SELECT a.run_id, a.attempt, a.state, a.owner, a.partitions, a.started_at, a.finished_at, a.error, a.materialized, a.failed FROM attempts a LEFT JOIN workers w ON w.owner = a.owner
		WHERE a.state='running' AND a.owner != ? AND (w.heartbeat_at IS NULL OR w.heartbeat_at < ?)`, self, cut)
}

// LastHeartbeats returns each known worker's last heartbeat (Unix ms), by
// owner: when an expired attempt's server actually stopped.
func (s *Store) LastHeartbeats(ctx context.Context) (map[string]int64, error) {
	var ws []struct {
		Owner string `db:"owner"`
		At    int64  `db:"heartbeat_at"`
	}
	if err := s.r.SelectContext(ctx, &ws, `SELECT owner, heartbeat_at FROM workers`); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(ws))
	for _, w := range ws {
		out[w.Owner] = w.At
	}
	return out, nil
}
