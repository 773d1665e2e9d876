package db_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// record reports ms to store as the test's materializations at now; t
// fails when the store refuses them.
func record(t testing.TB, store *db.Store, ms []db.Materialization, now time.Time) {
	t.Helper()
	if _, err := store.RecordMaterializations(t.Context(), ms, "test", "", now); err != nil {
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

// upDownDaily is a workspace of two daily assets, 2025-01-01 to 2025-01-10:
// up, and down, which reads it.
const upDownDaily = `assets:
  up:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-11}}
    executor: {demo: {duration: 1s}}
  down:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-11}}
    deps: [up]
    executor: {demo: {duration: 1s}}
`

// staleInputAt is the staleness input of ws and ids whose assets' spaces
// are those of now (without dynamic keys).
func staleInputAt(ws *catalog.Workspace, ids map[string]int64, now time.Time) db.StaleInput {
	return db.StaleInput{WS: ws, IDs: ids, SpaceOf: func(a *catalog.Asset) catalog.Space { return a.Scheme.Space(now, nil) }}
}

// lineDiff is the first line where a and b (named as and bs) differ.
func lineDiff(a, b, as, bs string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d\n%s: %.800s\n%s: %.800s", i+1, as, la[i], bs, lb[i])
		}
	}
	return fmt.Sprintf("%d lines %s, %d %s", len(la), as, len(lb), bs)
}
