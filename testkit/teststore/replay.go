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
