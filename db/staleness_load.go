package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/tessera-dev/tessera/catalog"
)

func (s *Store) baseFactsAt(ctx context.Context, assetID int64, code string, sp catalog.Space, version int64) (*baseFacts, error) {
	c := s.staleCache()
	unlock := c.lock(fmt.Sprint("base:", assetID))
	defer unlock()
	c.mu.Lock()
	e, ok := c.base[assetID]
	var keys []string
	var runs [][2]int64
	patchable := ok && e.code == code && c.dirtyAll <= e.version && c.full[assetID] <= e.version
	if patchable {
		seen := map[string]bool{}
		for _, ch := range c.changes[assetID] {
			switch {
			case ch.event <= e.version:
			case ch.key == "":
				runs = append(runs, [2]int64{ch.lo, ch.hi})
			case !seen[ch.key]:
				seen[ch.key] = true
				keys = append(keys, ch.key)
			}
		}
	}
	c.mu.Unlock()
	var ranges [][2]int64
	if patchable {
		// Patched when the changed partitions are in few ranges (a
		// few partitions, or many in runs).
		ranges = patchRanges(sp, keys, runs)
		patchable = len(ranges) <= patchLimit(len(e.facts.Idx))
	}
	if patchable && c.cleanSince(assetID, e.version) {
		return e.facts, nil
	}
	// Leases read before the rows (leaseFacts); their indexes alone, not
	// a leasedPart per partition (10,000 at 100 attempts of 100, on every
	// recomputation while a backfill runs).
	leases, err := leasedIdxs(ctx, s.r, assetID, math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	var b *baseFacts
	var gens *blockGens
	switch {
	case patchable:
		b, err = s.patchBaseFacts(ctx, e.facts, assetID, code, ranges)
	case ok && e.code == code && e.gens != nil && s.unchangedSince(ctx, assetID, e.gens):
		// Nothing written to the asset's rows since its entry was loaded
		// (an event of unknown effect, say): the entry holds.
		b, gens = e.facts, e.gens
		c.revalidated.Add(1)
	default:
		c.reloads.Add(1)
		b, gens, err = s.loadBaseFacts(ctx, assetID, code)
	}
	if err != nil {
		return nil, err
	}
	b = leaseFacts(b, leases)
	c.mu.Lock()
	c.base[assetID] = baseEntry{version: version, code: code, facts: b, gens: gens}
	// Changes up to version are in this entry now.
	kept := c.changes[assetID][:0:0]
	for _, ch := range c.changes[assetID] {
		if ch.event > version {
			kept = append(kept, ch)
		}
	}
	c.changes[assetID] = kept
	c.mu.Unlock()
	return b, nil
}

// patchBaseFacts returns a copy of old with the rows in ranges (of the
// changed keys, patchRanges) re-read from
// the store (updated, inserted or removed). The changed indexes are read as
// ranges (neighbours merged, a few unchanged rows in between read again)
// through the covering staleness index, in one query per few thousand
// ranges: a backfill changes runs of consecutive partitions, so a patch
// costs about the rows it changed, not a lookup per key.
func (s *Store) patchBaseFacts(ctx context.Context, old *baseFacts, assetID int64, code string, ranges [][2]int64) (*baseFacts, error) {
	fresh, err := s.loadRanges(ctx, assetID, code, ranges)
	if err != nil {
		return nil, err
	}
	// Merge: the old rows outside every range, and the rows read.
	b := newBaseFacts(len(old.Idx) + len(fresh.Idx))
	r, j := 0, 0
	for k, i := range old.Idx {
		for j < len(fresh.Idx) && fresh.Idx[j] < i {
			b.add(fresh, j)
			j++
		}
		for r < len(ranges) && ranges[r][1] < i {
			r++
		}
		if r < len(ranges) && ranges[r][0] <= i {
			continue // re-read: kept if still there, from fresh
		}
		b.add(old, k)
	}
	for ; j < len(fresh.Idx); j++ {
		b.add(fresh, j)
	}
	return b, nil
}

// patchRanges are the index ranges a patch of keys and runs of indexes
// reads again (keys not in sp are left out).
func patchRanges(sp catalog.Space, keys []string, runs [][2]int64) [][2]int64 {
	idxs := make([]int64, 0, len(keys))
	for _, k := range keys {
		if i, err := sp.Index(k); err == nil {
			idxs = append(idxs, i)
		}
	}
	slices.Sort(idxs)
	out := idxRanges(slices.Compact(idxs), patchGap)
	if len(runs) == 0 {
		return out
	}
	out = append(out, runs...)
	slices.SortFunc(out, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := out[:1]
	for _, r := range out[1:] {
		if l := &merged[len(merged)-1]; r[0]-l[1] <= patchGap+1 {
			l[1] = max(l[1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// patchGap is how many unchanged rows between two changed ones are read
// again rather than seek twice; patchRangesPerQuery bounds a query's ranges.
const (
	patchGap            = 16
	patchRangesPerQuery = 4096
)

// idxRanges merges sorted, distinct indexes into [lo, hi] ranges, joining
// neighbours at most gap apart.
func idxRanges(idxs []int64, gap int64) [][2]int64 {
	var out [][2]int64
	for _, i := range idxs {
		if n := len(out); n > 0 && i-out[n-1][1] <= gap+1 {
			out[n-1][1] = i
			continue
		}
		out = append(out, [2]int64{i, i})
	}
	return out
}

// byIdx sorts baseFacts rows by index.
type byIdx struct{ f *baseFacts }

func (s byIdx) Len() int { return len(s.f.Idx) }

func (s byIdx) Less(a, b int) bool { return s.f.Idx[a] < s.f.Idx[b] }

func (s byIdx) Swap(a, b int) {
	f := s.f
	f.Idx[a], f.Idx[b] = f.Idx[b], f.Idx[a]
	f.Status[a], f.Status[b] = f.Status[b], f.Status[a]
	f.Flags[a], f.Flags[b] = f.Flags[b], f.Flags[a]
	f.MatAt[a], f.MatAt[b] = f.MatAt[b], f.MatAt[a]
	f.Code[a], f.Code[b] = f.Code[b], f.Code[a]
}

// sortFacts sorts rows by index.
func sortFacts(b *baseFacts) { sort.Sort(byIdx{b}) }

// loadRows reads an asset's facts from its status rows; large assets are
// read in a few index ranges of about equal row counts (from the rollup),
// concurrently.
func (s *Store) loadRows(ctx context.Context, assetID int64, code string) (*baseFacts, error) {
	var blocks []struct {
		Block int64 `db:"block"`
		N     int64 `db:"n"`
	}
	if err := s.r.SelectContext(ctx, &blocks, `SELECT block, SUM(n) AS n FROM partition_rollup WHERE asset_id=? GROUP BY block ORDER BY block`, assetID); err != nil {
		return nil, err
	}
	var total int64
	for _, b := range blocks {
		total += b.N
	}
	parts := int64(min(runtime.NumCPU(), 4))
	if total < 200_000 || parts < 2 {
		return s.loadRange(ctx, assetID, code, 0, math.MaxInt64, total)
	}
	type span struct{ lo, hi, n int64 }
	var spans []span
	cur := span{lo: 0}
	for i, b := range blocks {
		cur.n += b.N
		if cur.n >= total/parts && int64(len(spans)) < parts-1 && i < len(blocks)-1 {
			cur.hi = (b.Block+1)<<RollupShift - 1
			spans = append(spans, cur)
			cur = span{lo: cur.hi + 1}
		}
	}
	cur.hi = math.MaxInt64
	spans = append(spans, cur)
	out := make([]*baseFacts, len(spans))
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	for i, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.loadRange(ctx, assetID, code, sp.lo, sp.hi, sp.n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := &baseFacts{Idx: make([]int64, 0, total), Status: make([]uint8, 0, total), Flags: make([]uint8, 0, total),
		MatAt: make([]int64, 0, total), Code: make([]string, 0, total)}
	for _, p := range out {
		b.Idx = append(b.Idx, p.Idx...)
		b.Status = append(b.Status, p.Status...)
		b.Flags = append(b.Flags, p.Flags...)
		b.MatAt = append(b.MatAt, p.MatAt...)
		b.Code = append(b.Code, p.Code...)
	}
	return b, nil
}

// push appends one row read as idx*32 + materialized + tainted*2 +
// failed*4 + in_progress*8 (the packed column of loadRange and
// patchBaseFacts), its materialization time and code version.
func (b *baseFacts) push(packed, at int64, code string) {
	var fl, sc uint8
	if packed&1 != 0 {
		fl |= factMaterialized
	}
	if packed&2 != 0 {
		fl |= factTainted
	}
	switch {
	case packed&4 != 0:
		sc = stFailed
	case packed&8 != 0:
		sc = stInProgress
	}
	b.Idx = append(b.Idx, packed>>5)
	b.Status = append(b.Status, sc)
	b.Flags = append(b.Flags, fl)
	b.MatAt = append(b.MatAt, at)
	b.Code = append(b.Code, code)
}

// loadRange reads the facts of the rows with index in [lo, hi].
func (s *Store) loadRange(ctx context.Context, assetID int64, code string, lo, hi, n int64) (*baseFacts, error) {
	b := &baseFacts{Idx: make([]int64, 0, n), Status: make([]uint8, 0, n), Flags: make([]uint8, 0, n),
		MatAt: make([]int64, 0, n), Code: make([]string, 0, n)}
	// The rows and the status ranges in one snapshot: a range turned into
	// rows between two reads would be in neither, and its partitions
	// missing from the facts until they are loaded again (the event of the
	// write that turned it names only the partition written).
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var err error
		b, err = s.loadRangeIn(ctx, q, b, assetID, code, lo, hi)
		return err
	})
	return b, err
}

// loadRangeIn is loadRange's reads, on q.
func (s *Store) loadRangeIn(ctx context.Context, q *sqlx.Conn, b *baseFacts, assetID int64, code string, lo, hi int64) (*baseFacts, error) {
	// Three columns per row (each column costs cgo calls): the index and
	// flags packed in one integer, the materialization time, and the code
	// version only where it differs from the asset's current one, after a
	// "=" (the driver reads an empty text as NULL: without it a code version
	// "" read as the current one, unlike in patchBaseFacts).
	rows, err := q.QueryContext(ctx, `SELECT idx * 32 + materialized + (CASE WHEN tainted_at IS NOT NULL THEN 2 ELSE 0 END)
			+ (CASE status WHEN 'failed' THEN 4 WHEN 'in_progress' THEN 8 ELSE 0 END),
			COALESCE(last_mat_at, 0),
			CASE WHEN last_mat_code_version IS NOT DISTINCT FROM ? THEN NULL ELSE '=' || COALESCE(last_mat_code_version, '') END
		FROM partition_status`+indexedBy(s.dialect, "partition_status_staleness")+` WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, code, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	intern := map[string]string{}
	var packed, at int64
	var cv sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&packed, &at, &cv); err != nil {
			return nil, err
		}
		c := code
		if len(cv) > 0 {
			var ok bool
			if c, ok = intern[string(cv[1:])]; !ok {
				c = string(cv[1:])
				intern[c] = c
			}
		}
		b.push(packed, at, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if s.betweenReads != nil {
		s.betweenReads()
	}
	return withRangeFacts(ctx, q, b, assetID, [][2]int64{{lo, hi}})
}

// withRangeFacts merges into b (facts of status rows, in index order) the
// facts of the partitions status ranges hold within the index ranges rs (in
// order): materialized at their range's end, by its code version.
func withRangeFacts(ctx context.Context, q Querier, b *baseFacts, assetID int64, rs [][2]int64) (*baseFacts, error) {
	var spans []statusRangeRow
	for _, r := range rs {
		sp, err := rangeSpans(ctx, q, assetID, r[0], r[1])
		if err != nil {
			return nil, err
		}
		spans = append(spans, sp...)
	}
	if len(spans) == 0 {
		return b, nil
	}
	held := newBaseFacts(int(spansLen(spans)))
	for _, r := range spans {
		for i := r.Lo; i <= r.Hi; i++ {
			held.push(i*32+1, r.Finished, r.Code)
		}
	}
	out := newBaseFacts(len(b.Idx) + len(held.Idx))
	j := 0
	for k, i := range b.Idx {
		for j < len(held.Idx) && held.Idx[j] < i {
			out.add(held, j)
			j++
		}
		if j < len(held.Idx) && held.Idx[j] == i {
			j++ // a partition both a row and in a range (never within one snapshot): the row
		}
		out.add(b, k)
	}
	for ; j < len(held.Idx); j++ {
		out.add(held, j)
	}
	return out, nil
}
