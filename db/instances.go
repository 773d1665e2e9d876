package db

import (
	"context"
	"time"
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

// InstancesBefore lists a partition's instances newest first, those after
// (older than) before when it is not nil.
func (s *Store) InstancesBefore(ctx context.Context, assetID int64, key string, before *InstancePos, limit int) ([]Instance, error) {
	q := `SELECT * FROM partition_instances WHERE asset_id=? AND partition_key=?`
	args := []any{assetID, key}
	if before != nil {
		q += ` AND (created_at, COALESCE(finished_at, created_at), id) < (?, ?, ?)`
		args = append(args, before.CreatedAt, before.SortAt, before.ID)
	}
	q += ` ORDER BY created_at DESC, COALESCE(finished_at, created_at) DESC, id DESC LIMIT ?`
	var out []Instance
	err := s.R.SelectContext(ctx, &out, q, append(args, limit)...)
	return out, err
}
