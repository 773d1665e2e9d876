package teststore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// ReplayEquals rebuilds s's projections from its events (a store file in
// t.TempDir()) and reports each difference from s's own as an error: the
// events alone say what the projections hold.
func ReplayEquals(t testing.TB, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	rebuilt, err := s.Rebuild(ctx, filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	diffs, err := db.CompareProjections(ctx, s, rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error("replay: " + d)
	}
}

// MarkSchemaNewer records in s's goose table a migration by versions past
// this binary's newest, as a newer tessera would have left it, and answers
// that version and the binary's newest.
func MarkSchemaNewer(t testing.TB, s *db.Store, by int64) (newer, binary int64) {
	t.Helper()
	binary, err := s.MigrationVersion()
	if err != nil {
		t.Fatal(err)
	}
	newer = binary + by
	if _, err := s.RawWriter().Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, TRUE)`, newer); err != nil {
		t.Fatal(err)
	}
	return newer, binary
}
