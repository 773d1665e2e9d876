package db_test

import (
	"context"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// TestLastAttemptStatus: a partition's last attempt status as its row
// records it, "" for a partition never attempted, and the store's error
// (not "") when the store cannot answer.
func TestLastAttemptStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.store.RecordMaterializations(ctx, []db.Materialization{f.mat(3, db.StatusFailed, "r", f.now)}, "test", "", f.now); err != nil {
		t.Fatal(err)
	}
	id := f.ids["t.hourly"]
	if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(3)); err != nil || got != db.StatusFailed {
		t.Fatalf("attempted partition: %q, %v; want %q", got, err, db.StatusFailed)
	}
	if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(4)); err != nil || got != "" {
		t.Fatalf("partition never attempted: %q, %v; want \"\", nil", got, err)
	}
	f.store.Close()
	if got, err := f.store.LastAttemptStatus(ctx, id, f.sp.Key(4)); err == nil {
		t.Fatalf("closed store: %q, nil; want its error", got)
	}
}
