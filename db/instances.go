package db

import (
	"context"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"
)

// Instance is one immutable attempt to build an asset partition.
type Instance struct {
	ID           string  `db:"id"`
	AssetID      int64   `db:"asset_id"`
	Partition    string  `db:"partition_key"`
	RunID        string  `db:"run_id"`
	Status       string  `db:"status"`
	CodeVersion  string  `db:"code_version"`
	Metadata     *string `db:"metadata"`
	Error        *string `db:"error"`
	Source       string  `db:"source"`
	StartedAt    *int64  `db:"started_at"`
	FinishedAt   *int64  `db:"finished_at"`
	SupersedesID *string `db:"supersedes_id"`
	CreatedAt    int64   `db:"created_at"`
}

// Duration is how long the attempt took, zero while it runs.
func (i Instance) Duration() time.Duration {
	if i.StartedAt == nil || i.FinishedAt == nil {
		return 0
	}
	return time.Duration(*i.FinishedAt-*i.StartedAt) * time.Millisecond
}

// Instances lists a partition's instances, newest first.
func (s *Store) Instances(ctx context.Context, assetID int64, key string, limit int) ([]Instance, error) {
	return s.InstancesBefore(ctx, assetID, key, nil, limit)
}

// InstancePos is an instance's place in its partition's history, which is
// ordered newest first by creation, then finish, then id (a total order, so
// that a page that ends at one instance can be followed by the next).
type InstancePos struct {
	CreatedAt, SortAt int64 // SortAt: finished_at, or created_at while unfinished
	ID                string
}

// Pos is i's place in its partition's history.
func (i Instance) Pos() InstancePos {
	p := InstancePos{CreatedAt: i.CreatedAt, SortAt: i.CreatedAt, ID: i.ID}
	if i.FinishedAt != nil {
		p.SortAt = *i.FinishedAt
	}
	return p
}

// instanceCols are partition_instances' columns, in the order
// inProgressInstances selects them.
const instanceCols = `id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at`

// inProgressInstances selects, as partition_instances rows, the instances
// in progress of the partition_status rows ps that match where: the engine
// records an instance when its attempt ends, and meanwhile the status row
// holding the lease says which instance, run and code version build the
// partition (an instance recorded in progress by an earlier version is in
// partition_instances already, and left out here). Their start is their
// run's running attempt's.
func inProgressInstances(where string) string {
	const start = `COALESCE((SELECT a.started_at FROM attempts a WHERE a.run_id = ps.lease_run_id AND a.state = 'running'), ps.updated_at)`
	return `SELECT ps.lease_instance_id, ps.asset_id, ps.partition_key, ps.lease_run_id, 'in_progress', COALESCE(ps.lease_code_version, ''),
		NULL, NULL, 'backfill', ` + start + `, NULL, NULL, ` + start + `
		FROM partition_status ps WHERE ps.status = 'in_progress' AND ps.lease_run_id IS NOT NULL AND ` + where + `
		AND NOT EXISTS (SELECT 1 FROM instance_rows i WHERE i.asset_id = ps.asset_id AND i.partition_key = ps.partition_key AND i.id = ps.lease_instance_id)`
}

// InstancesBefore lists a partition's instances newest first, those after
// (older than) before when it is not nil; an instance in progress is first.
func (s *Store) InstancesBefore(ctx context.Context, assetID int64, key string, before *InstancePos, limit int) ([]Instance, error) {
	q := `SELECT * FROM (SELECT ` + instanceCols + ` FROM partition_instances WHERE asset_id=? AND partition_key=?
		UNION ALL ` + inProgressInstances(`ps.asset_id=? AND ps.partition_key=?`) + `) AS i`
	args := []any{assetID, key, assetID, key}
	if before != nil {
		q += ` WHERE (created_at, COALESCE(finished_at, created_at), id) < (?, ?, ?)`
		args = append(args, before.CreatedAt, before.SortAt, before.ID)
	}
	q += ` ORDER BY created_at DESC, COALESCE(finished_at, created_at) DESC, id DESC LIMIT ?`
	var out []Instance
	err := s.snapshot(ctx, func(c *sqlx.Conn) error {
		if err := c.SelectContext(ctx, &out, q, append(args, limit)...); err != nil {
			return err
		}
		ls, err := standingByKey(ctx, c, assetID, []string{key})
		if l, ok := ls[key]; ok {
			in := l.instance(assetID)
			if p := in.Pos(); before == nil || p.CreatedAt < before.CreatedAt || p.CreatedAt == before.CreatedAt &&
				(p.SortAt < before.SortAt || p.SortAt == before.SortAt && p.ID < before.ID) {
				out = append(out, in)
				sort.SliceStable(out, func(a, b int) bool { return newerInstance(out[a].Pos(), out[b].Pos()) })
				if len(out) > limit {
					out = out[:limit]
				}
			}
		}
		return err
	})
	return out, err
}

// newerInstance orders a partition's history newest first (InstancePos).
func newerInstance(a, b InstancePos) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	if a.SortAt != b.SortAt {
		return a.SortAt > b.SortAt
	}
	return a.ID > b.ID
}

// instance is the instance in progress a lease stands for (as
// inProgressInstances reads it from a leased status row), or the
// materialized one a status range holds.
func (l leasedPart) instance(assetID int64) Instance {
	started := l.Started
	in := Instance{ID: l.InstanceID(), AssetID: assetID, Partition: l.Key, RunID: l.RunID, Status: StatusInProgress, CodeVersion: l.Code,
		Source: "backfill", StartedAt: &started, CreatedAt: started}
	if l.done {
		// The instance a status range holds (as instance_ranges_expanded
		// reads an instance range).
		finished := l.finished
		in.Status, in.FinishedAt = StatusMaterialized, &finished
	}
	return in
}
