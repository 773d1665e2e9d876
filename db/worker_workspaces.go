package db

import "context"

// Workspaces of the instances (0033_live_instances.sql): each instance on
// a PostgreSQL store records the fingerprint of the workspace it serves,
// so that one started with another workspace finds out and does not plan.

// staleWorkspaceAge (ms): the workspace of an instance that is not in the
// workers table is forgotten once recorded this long ago.
const staleWorkspaceAge = 10 * 60 * 1000

// WorkerWorkspace is an instance's workspace as recorded.
type WorkerWorkspace struct {
	Owner       string `db:"owner"`
	Fingerprint string `db:"fingerprint"`
	Assets      string `db:"assets"` // JSON object: asset name → hash of its definition
	Since       int64  `db:"since"`  // Unix ms: when the instance began to serve it
}

// KeepWorkerWorkspace records w for its owner (since stays that of the
// fingerprint recorded first while it does not change), forgets those of
// the instances that left the workers table a while ago (an instance
// records its workspace before its first heartbeat), and returns the
// record as kept.
func (s *Store) KeepWorkerWorkspace(ctx context.Context, w WorkerWorkspace) (WorkerWorkspace, error) {
	if s.dialect != Postgres {
		return w, ErrNotPostgres
	}
	wr := s.writer(ctx)
	if _, err := wr.ExecContext(ctx, `INSERT INTO worker_workspaces (owner, fingerprint, assets, since) VALUES (?,?,?,?)
		ON CONFLICT (owner) DO UPDATE SET fingerprint=excluded.fingerprint, assets=excluded.assets,
		since=CASE WHEN worker_workspaces.fingerprint = excluded.fingerprint THEN worker_workspaces.since ELSE excluded.since END`,
		w.Owner, w.Fingerprint, w.Assets, w.Since); err != nil {
		return w, err
	}
	if _, err := wr.ExecContext(ctx, `DELETE FROM worker_workspaces WHERE owner != ? AND since < ? AND owner NOT IN (SELECT owner FROM workers)`,
		w.Owner, w.Since-staleWorkspaceAge); err != nil {
		return w, err
	}
	var kept WorkerWorkspace
	err := wr.GetContext(ctx, &kept, `SELECT owner, fingerprint, assets, since FROM worker_workspaces WHERE owner=?`, w.Owner)
	return kept, err
}

// LiveWorkerWorkspaces lists the workspaces of the instances other than
// self that heartbeated at cut (Unix ms) or later, oldest first.
func (s *Store) LiveWorkerWorkspaces(ctx context.Context, self string, cut int64) ([]WorkerWorkspace, error) {
	if s.dialect != Postgres {
		return nil, ErrNotPostgres
	}
	return selectAll[WorkerWorkspace](ctx, s.r, `SELECT ww.owner, ww.fingerprint, ww.assets, ww.since FROM worker_workspaces ww
		JOIN workers w ON w.owner = ww.owner WHERE ww.owner != ? AND w.heartbeat_at >= ? ORDER BY ww.since, ww.owner`, self, cut)
}
