package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// record reports ms to store as the test's materializations at now; t
// fails when the store refuses them.
func record(t testing.TB, store *db.Store, ms []db.Materialization, now time.Time) {
	t.Helper()
	if _, err := store.RecordMaterializations(context.Background(), ms, "test", "", now); err != nil {
		t.Fatal(err)
	}
}

// span is the indexes lo, lo+step, … below hi.
func span(lo, hi, step int64) []int64 {
	var out []int64
	for i := lo; i < hi; i += step {
		out = append(out, i)
	}
	return out
}

// staleInputAt is the staleness input of ws and ids whose assets' spaces
// are those of now (without dynamic keys).
func staleInputAt(ws *catalog.Workspace, ids map[string]int64, now time.Time) db.StaleInput {
	return db.StaleInput{WS: ws, IDs: ids, SpaceOf: func(a *catalog.Asset) catalog.Space { return a.Scheme.Space(now, nil) }}
}
