package db_test

import (
	"context"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestStoreOpensOnBothBackends: a fresh store of each dialect is migrated
// to the same schema version, answers Ping, and says its dialect.
func TestStoreOpensOnBothBackends(t *testing.T) {
	t.Parallel()
	versions := map[db.Dialect]int64{}
	for _, d := range teststore.Dialects {
		store := teststore.OpenOn(t, d)
		if store.Dialect() != d {
			t.Fatalf("opened %v, store says %v", d, store.Dialect())
		}
		if err := store.Ping(context.Background()); err != nil {
			t.Fatalf("%v: ping: %v", d, err)
		}
		v, err := store.MigrationVersion()
		if err != nil {
			t.Fatalf("%v: version: %v", d, err)
		}
		versions[d] = v
	}
	if versions[db.SQLite] != versions[db.Postgres] || versions[db.SQLite] < 25 {
		t.Fatalf("schema versions differ or are old: %v", versions)
	}
}
