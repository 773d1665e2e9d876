package db

// StaleReloads counts the full reloads of memoized base facts (a patch is
// not one).
func (s *Store) StaleReloads() int64 { return s.staleCache().reloads.Load() }

// Migrations is the embedded migration files, for tests that stop at an
// older schema version.
var Migrations = migrations

// SetPartitionScanLimit changes how many upstream partitions of one
// dependency PartitionStalenessAt scans in the store before it reads the
// memoized upstream facts instead, and returns the restore function.
func SetPartitionScanLimit(n int64) func() {
	old := partitionScanLimit
	partitionScanLimit = n
	return func() { partitionScanLimit = old }
}
