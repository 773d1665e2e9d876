package db

import (
	"context"
	"database/sql"
)

// StaleReloads counts the full reloads of memoized base facts (a patch is
// not one).
func (s *Store) StaleReloads() int64 { return s.staleCache().reloads.Load() }

// SetPartitionScanLimit changes how many upstream partitions of one
// dependency PartitionStalenessAt scans in the store before it reads the
// memoized upstream facts instead, and returns the restore function.
func SetPartitionScanLimit(n int64) func() {
	old := partitionScanLimit
	partitionScanLimit = n
	return func() { partitionScanLimit = old }
}

// MigrateTo applies the embedded migrations to d up to version (tests of
// a migration start from the schema before it).
func MigrateTo(d *sql.DB, version int64) error {
	p, err := migrator(d)
	if err != nil {
		return err
	}
	_, err = p.UpTo(context.Background(), version)
	return err
}

// Probes counts the probe writes a failing store has tried.
func (s *Store) Probes() int64 { return s.health.probes.Load() }
