package db

// StaleReloads counts the full reloads of memoized base facts (a patch is
// not one).
func (s *Store) StaleReloads() int64 { return s.staleCache().reloads.Load() }

// Migrations is the embedded migration files, for tests that stop at an
// older schema version.
var Migrations = migrations
