package db_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// Keys stored before migration 23 (a row each) read the same from their
// blocks after it, across block edges and at the list's end.
func TestKeyBlocksMigration(t *testing.T) {
	t.Parallel()
	const n = 3*db.KeyBlock + 17
	want := make([]string, n)
	var vals []string
	for i := range want {
		want[i] = fmt.Sprintf("k-%05d \"odd\" ✓", i) // quotes and non-ASCII survive the JSON blocks
		vals = append(vals, fmt.Sprintf("('bf_a', %d, '%s')", i, strings.ReplaceAll(want[i], "'", "''")))
	}
	s := storeFrom(t, 22, `INSERT INTO backfill_keys (backfill_id, n, key) VALUES `+strings.Join(vals, ","),
		`INSERT INTO backfill_keys (backfill_id, n, key) VALUES ('bf_b', 0, 'only')`)
	for _, c := range [][2]int64{{0, 1}, {0, n}, {db.KeyBlock - 3, db.KeyBlock + 3}, {2*db.KeyBlock - 1, 2*db.KeyBlock + 1}, {n - 5, n}, {n - 2, n + 100}, {n, n + 5}} {
		got, err := db.BackfillKeys(t.Context(), s.RawReader(), "bf_a", c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		if exp := want[c[0]:min(c[1], n)]; !slices.Equal(got, exp) {
			t.Fatalf("keys [%d, %d): got %d keys (%.80q…), want %d", c[0], c[1], len(got), got, len(exp))
		}
	}
	got, err := db.BackfillKeys(t.Context(), s.RawReader(), "bf_b", 0, 10)
	if err != nil || !slices.Equal(got, []string{"only"}) {
		t.Fatalf("bf_b: %q, %v; want [only]", got, err)
	}
}
