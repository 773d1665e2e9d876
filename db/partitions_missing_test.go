package db_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestMissingAfterSkipsFullBlocks: MissingAfter answers what a walk of
// every index answers, from any start and with any limit, over full rollup
// blocks (which it skips), blocks with holes, a hole right after a full
// block, and a space whose end cuts a block.
func TestMissingAfterSkipsFullBlocks(t *testing.T) {
	teststore.SkipInRacePass(t)
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		holes := map[int64]bool{3072: true, 3500: true, 4095: true, 5300: true}
		var batch []db.Materialization
		present := map[int64]bool{}
		for i := int64(0); i < 5250; i++ {
			if holes[i] {
				continue
			}
			st := db.StatusMaterialized
			if i%13 == 0 {
				st = db.StatusFailed
			}
			batch = append(batch, f.mat(i, st, "r", f.now))
			present[i] = true
		}
		record(t, f.store, batch, f.now)
		checkRollup(t, f.store)
		walk := func(after, size int64, limit int) []int64 {
			var out []int64
			for i := after + 1; i < size && len(out) < limit; i++ {
				if !present[i] {
					out = append(out, i)
				}
			}
			return out
		}
		id := f.ids["t.hourly"]
		for _, size := range []int64{5200, 5250, 6000} {
			for _, after := range []int64{-1, 0, 1023, 2000, 3071, 3072, 3499, 4094, 4095, 5119, 5199, 5249} {
				for _, limit := range []int{1, 2, 5, 1000} {
					got, err := f.store.MissingAfter(ctx, id, after, size, limit)
					if err != nil {
						t.Fatal(err)
					}
					if want := walk(after, size, limit); !slices.Equal(got, want) {
						t.Fatalf("MissingAfter(after %d, size %d, limit %d) = %v, want %v", after, size, limit, got, want)
					}
				}
			}
		}
	})
}
