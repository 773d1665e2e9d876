package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// TestStatusCountsInRangeMatchesRows: the counts of a range, read from
// whole rollup blocks and the status rows of the partial blocks at its
// edges, equal a count of the rows, for ranges inside one block, on block
// boundaries, with a partial block at either edge or both, and past the
// stored rows.
func TestStatusCountsInRangeMatchesRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	batch := f.recordSpread(t)
	count := func(lo, hi int64) db.Counts {
		c := db.Counts{}
		for _, m := range batch {
			if m.Idx >= lo && m.Idx <= hi {
				c[m.Status]++
			}
		}
		return c
	}
	b := int64(db.RollupBlock)
	for _, r := range [][2]int64{
		{5, 900},            // inside one block
		{0, b - 1},          // one whole block
		{0, 4*b - 1},        // whole blocks only
		{3, 4*b - 1},        // partial first block
		{0, 3*b + 17},       // partial last block
		{b - 1, 3 * b},      // one partition of each edge block
		{b + 1, 4*b + 900},  // partial at both edges
		{b + 1, 2*b - 2},    // inside one block, not at its edges
		{4 * b, 5*b + 5000}, // past the stored rows
		{9000, 12000},       // nothing stored
	} {
		got, err := f.store.StatusCountsInRange(ctx, f.ids["t.hourly"], r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := count(r[0], r[1]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("[%d, %d]: %v, want %v", r[0], r[1], got, want)
		}
	}
}
