package db_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
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

// TestInstanceIDFunctionMatchesGo: tessera_instance_id, the SQL function
// behind the view of ranged instances (a Go function on SQLite, PL/pgSQL
// on PostgreSQL), derives the ids AttemptInstanceIDs derives.
func TestInstanceIDFunctionMatchesGo(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		for _, c := range []struct {
			run       string
			attempt   int64
			asset     string
			partition string
		}{
			{"run_abc", 1, "raw.events", "2025-03-01-00:00"},
			{"run_abc", 3, "raw.events", "2025-03-01-01:00"},
			{"r_01JX", 12, "ünïcode.asset", "clé|日本"},
			{"", 0, "", ""},
		} {
			var got string
			if err := store.RawReader().Get(&got, `SELECT tessera_instance_id(?, ?, ?, ?)`, c.run, c.attempt, c.asset, c.partition); err != nil {
				t.Fatal(err)
			}
			if want := db.AttemptInstanceIDs(c.run, c.attempt, c.asset)(c.partition); got != want {
				t.Errorf("tessera_instance_id(%q, %d, %q, %q) = %s, want %s", c.run, c.attempt, c.asset, c.partition, got, want)
			}
		}
	})
}

// TestEventPayloadsCompressedWithLZ4: on PostgreSQL (built with lz4, as
// Debian's is) the events' payloads are compressed with lz4, whose
// inserts cost the server a quarter of pglz's (migration 0037).
func TestEventPayloadsCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	store := teststore.OpenOn(t, db.Postgres)
	var method string
	if err := store.RawReader().Get(&method, `SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'payload'`); err != nil {
		t.Fatal(err)
	}
	if method != "l" {
		t.Fatalf("events.payload compression %q, want l (lz4)", method)
	}
}

// TestStatementsPlannedForTheirArguments: the store's PostgreSQL
// connections plan each statement when it runs (plan_cache_mode), so that
// a plan cached while a backfill's runs table was empty (a sequential
// scan) is not kept while it grows to thousands of rows.
func TestStatementsPlannedForTheirArguments(t *testing.T) {
	t.Parallel()
	store := teststore.OpenOn(t, db.Postgres)
	for name, pool := range map[string]*sqlx.DB{"writer": store.RawWriter(), "reader": store.RawReader()} {
		var mode string
		if err := pool.Get(&mode, `SHOW plan_cache_mode`); err != nil {
			t.Fatal(err)
		}
		if mode != "force_custom_plan" {
			t.Fatalf("%s: plan_cache_mode %q, want force_custom_plan", name, mode)
		}
	}
	// A connection string that sets it keeps its own.
	own := teststore.OpenAt(t, pgtest.URL(t)+"&plan_cache_mode=auto")
	var mode string
	if err := own.RawWriter().Get(&mode, `SHOW plan_cache_mode`); err != nil || mode != "auto" {
		t.Fatalf("with plan_cache_mode=auto in the URL: %q %v, want auto", mode, err)
	}
}
