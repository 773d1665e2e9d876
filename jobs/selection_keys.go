package jobs

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// An explicit selector's key list: up to MaxExplicitKeys keys, checked
// against the space of every asset selected, each key's index in it
// computed once and kept for the preview, duplicates dropped without a map
// of every key when no two keys share an index.

// explicitKeyCount checks the length of an explicit selector's key list
// (first is the first asset selected, for the example of an empty list).
func explicitKeyCount(sel Selector, first *catalog.Asset, now time.Time, dyn db.DynamicKeys) error {
	if len(sel.Keys) == 0 {
		// The example is a key of the first asset, when it has one.
		example := ""
		if sp := first.Scheme.Space(now, dyn); sp.Len() > 0 {
			k, _ := json.Marshal([]string{sp.Key(0)})
			example = fmt.Sprintf(`, e.g. {"type": "explicit", "keys": %s}`, k)
		}
		return &InputError{Field: "selector.keys", Msg: "the explicit key list is empty", Code: CodeEmptyKeyList, Params: map[string]string{"example": example}}
	}
	if len(sel.Keys) > MaxExplicitKeys {
		return bad("selector.keys", "%d keys in the explicit list; at most %d", len(sel.Keys), MaxExplicitKeys)
	}
	return nil
}

// explicitIn checks every key of the caller's explicit list against asset
// a, whose space is sp (the first key that is not one of its partitions is
// the error, named by its place in the list, duplicates included), and
// makes seg the keys without duplicates: r.keys, in the caller's order
// (set at the first asset), and their indexes in sp (r.idx).
func (r *resolved) explicitIn(seg *db.Segment, a *catalog.Asset, sp catalog.Space) error {
	keys := r.req.Selector.Keys
	idx := make([]int64, len(keys))
	for i, k := range keys {
		j, err := sp.Index(k)
		if err != nil {
			return bad(fmt.Sprintf("selector.keys[%d]", i), "asset %s: %v", a.Key, err)
		}
		idx[i] = j
	}
	if r.keys == nil {
		r.keys, r.keep = dedupKeys(keys, idx, sp.Len())
	}
	if r.keep != nil {
		kept := make([]int64, len(r.keep))
		for n, i := range r.keep {
			kept[n] = idx[i]
		}
		idx = kept
	}
	if r.idx == nil {
		r.idx = map[int64][]int64{}
	}
	r.idx[seg.Pos] = idx
	seg.Explicit = true
	seg.Partitions = int64(len(r.keys))
	return nil
}

// dedupKeys returns keys without duplicates, in their order, and the
// positions it keeps (nil when it keeps every key). idx are the keys'
// indexes in a space of n partitions: equal keys have equal indexes, so
// keys whose indexes all differ all differ, which a bit per partition
// tells without a map of every key.
func dedupKeys(keys []string, idx []int64, n int64) ([]string, []int32) {
	if distinctIndexes(idx, n) {
		return keys, nil
	}
	seen := make(map[string]struct{}, len(keys))
	out := make([]string, 0, len(keys))
	var keep []int32
	for i, k := range keys {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
			keep = append(keep, int32(i))
		}
	}
	return out, keep
}

// maxIndexBits is the largest space distinctIndexes checks with a bitmap
// (16 MB); a larger one sorts a copy of the indexes.
const maxIndexBits = 1 << 27

// distinctIndexes reports whether the indexes, each in [0, n), all differ.
func distinctIndexes(idx []int64, n int64) bool {
	increasing := true
	for i := 1; i < len(idx) && increasing; i++ {
		increasing = idx[i] > idx[i-1]
	}
	if increasing {
		return true
	}
	if n <= maxIndexBits {
		seen := make([]uint64, (n+63)/64)
		for _, i := range idx {
			if i < 0 || i >= n {
				return false
			}
			w, b := i>>6, uint64(1)<<(i&63)
			if seen[w]&b != 0 {
				return false
			}
			seen[w] |= b
		}
		return true
	}
	s := slices.Clone(idx)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return false
		}
	}
	return true
}
