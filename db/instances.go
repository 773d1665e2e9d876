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
	var out []Instance
	err := s.R.SelectContext(ctx, &out, `SELECT * FROM partition_instances WHERE asset_id=? AND partition_key=?
		ORDER BY created_at DESC, COALESCE(finished_at, created_at) DESC LIMIT ?`, assetID, key, limit)
	return out, err
}
