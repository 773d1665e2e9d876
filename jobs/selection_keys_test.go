package jobs

import (
	"fmt"
	"slices"
	"testing"
)

// An explicit list loses its repeated keys and keeps its order, whichever
// way the repeats are found: indexes in increasing order (no repeat), a
// bit per partition, a sorted copy of the indexes (a space too big for
// bits), or, when two keys share an index, a map of the keys themselves.
func TestDedupKeysKeepsFirstAppearances(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		keys []string
		idx  []int64
		n    int64
		want []string
		keep []int32
	}{
		{"increasing", []string{"a", "b", "d"}, []int64{0, 1, 3}, 4, []string{"a", "b", "d"}, nil},
		{"any order, no repeat", []string{"d", "a", "b"}, []int64{3, 0, 1}, 4, []string{"d", "a", "b"}, nil},
		{"a repeat", []string{"d", "a", "d", "b", "a"}, []int64{3, 0, 3, 1, 0}, 4, []string{"d", "a", "b"}, []int32{0, 1, 3}},
		{"no repeat in a huge space", []string{"z", "a"}, []int64{maxIndexBits + 5, 2}, maxIndexBits + 10, []string{"z", "a"}, nil},
		{"a repeat in a huge space", []string{"z", "a", "z"}, []int64{maxIndexBits + 5, 2, maxIndexBits + 5}, maxIndexBits + 10, []string{"z", "a"}, []int32{0, 1}},
		{"two keys of one index", []string{"x", "X", "x"}, []int64{2, 2, 2}, 4, []string{"x", "X"}, []int32{0, 1}},
	} {
		got, keep := dedupKeys(slices.Clone(c.keys), c.idx, c.n)
		if !slices.Equal(got, c.want) || !slices.Equal(keep, c.keep) {
			t.Errorf("%s: dedupKeys = %q, %v; want %q, %v", c.name, got, keep, c.want, c.keep)
		}
	}
	// A million keys in increasing order need no map and no copy.
	keys := make([]string, 1_000_000)
	idx := make([]int64, len(keys))
	for i := range keys {
		keys[i], idx[i] = fmt.Sprint(i), int64(i)
	}
	if got, keep := dedupKeys(keys, idx, int64(len(keys))); &got[0] != &keys[0] || keep != nil {
		t.Errorf("a list without repeats was copied")
	}
}
