package db

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// Staleness is computed at read time from the partition status rows of an
// asset and of its direct upstreams (catalog.Classify holds the rules). The
// facts read from the store are memoized per asset, keyed by the data
// version (the newest event id: every write to partition_status appends an
// event in the same transaction), the asset definition and the size of its
// partition space; the reasons themselves depend on the clock (FRESHNESS),
// so the counts of reasons memoized per facts (countMemo) hold only until
// the first freshness deadline of a partition fresh when they were counted.

// Row flags of StaleFacts.
const (
	factMaterialized uint8 = 1 << iota
	factTainted
)

// Status codes of StaleFacts.Status.
const (
	stMaterialized uint8 = iota
	stFailed
	stInProgress
)

var statusNames = [...]string{StatusMaterialized, StatusFailed, StatusInProgress}

// baseFacts are one asset's status rows in index order (only the columns the
// staleness rules need).
type baseFacts struct {
	Idx    []int64
	Status []uint8
	Flags  []uint8
	MatAt  []int64
	Code   []string // interned
}

// newBaseFacts is an empty baseFacts with room for n rows.
func newBaseFacts(n int) *baseFacts {
	return &baseFacts{Idx: make([]int64, 0, n), Status: make([]uint8, 0, n), Flags: make([]uint8, 0, n),
		MatAt: make([]int64, 0, n), Code: make([]string, 0, n)}
}

// add appends the row k of f to b.
func (b *baseFacts) add(f *baseFacts, k int) {
	b.Idx = append(b.Idx, f.Idx[k])
	b.Status = append(b.Status, f.Status[k])
	b.Flags = append(b.Flags, f.Flags[k])
	b.MatAt = append(b.MatAt, f.MatAt[k])
	b.Code = append(b.Code, f.Code[k])
}

// StaleFacts is an asset's staleness input: its rows plus, per row, the
// newest mapped upstream materialization and the freshness deadline.
type StaleFacts struct {
	Asset     *catalog.Asset
	ID        int64
	N         int64 // partitions in the asset's space
	base      *baseFacts
	UpAt      []int64 // newest mapped upstream materialization (Unix ms), 0 if none
	upDep     []int16 // dependency index of UpAt, -1 if none
	upIdx     []int64 // upstream partition index of UpAt
	StaleFrom []int64
	upSpaces  []catalog.Space
	// counted memoizes the counting passes over the rows (Counts,
	// BucketCounts, MaterializedStaleBuckets), which pages listing an asset
	// repeat on every view: facts are shared by every request of their
	// version (and, with StaleInput.MaxLag, a little longer).
	counted *countMemo
}

// countMemo holds results of counting passes by their arguments, each
// valid for the times from the one it was computed at until the first
// freshness deadline of a partition that was fresh then (the only way
// time changes a reason).
type countMemo struct {
	mu sync.Mutex
	m  map[countKey]counted
}

type countKey struct {
	pass         uint8
	lo, hi, size int64
}

type counted struct {
	from, until int64 // Unix ms: valid for now in [from, until)
	val         any
}

const (
	passCounts = iota
	passBuckets
	passStaleBuckets
	maxCounted = 256 // memoized results per facts; beyond, they start again
)

// memo returns the result of pass over [lo, hi] by size at now, computed
// by count (which lowers *until to the first freshness deadline of a fresh
// partition it met) unless memoized for now.
func (f *StaleFacts) memo(pass uint8, lo, hi, size int64, now time.Time, count func(ms int64, until *int64) any) any {
	ms := now.UnixMilli()
	if f.counted == nil {
		until := int64(math.MaxInt64)
		return count(ms, &until)
	}
	k := countKey{pass, lo, hi, size}
	f.counted.mu.Lock()
	c, ok := f.counted.m[k]
	f.counted.mu.Unlock()
	if ok && c.from <= ms && ms < c.until {
		return c.val
	}
	until := int64(math.MaxInt64)
	v := count(ms, &until)
	f.counted.mu.Lock()
	if f.counted.m == nil || len(f.counted.m) >= maxCounted {
		f.counted.m = map[countKey]counted{}
	}
	f.counted.m[k] = counted{from: ms, until: until, val: v}
	f.counted.mu.Unlock()
	return v
}

// freshUntil lowers *until to pf's freshness deadline when reason r is
// Fresh (at the deadline it turns FRESHNESS_LATE).
func freshUntil(r catalog.StaleReason, pf *catalog.PartitionFacts, until *int64) {
	if r == catalog.Fresh && pf.StaleFrom < *until {
		*until = pf.StaleFrom
	}
}

// Rows is the number of stored status rows.
func (f *StaleFacts) Rows() int { return len(f.base.Idx) }

// facts fills pf for row j.
func (f *StaleFacts) facts(j int, pf *catalog.PartitionFacts) {
	b := f.base
	pf.Materialized = b.Flags[j]&factMaterialized != 0
	pf.MatAt = b.MatAt[j]
	pf.CodeVersion = b.Code[j]
	pf.TaintedAt = 0
	if b.Flags[j]&factTainted != 0 {
		pf.TaintedAt = 1
	}
	pf.LastAttempt = statusNames[b.Status[j]]
	pf.Upstream.MatAt = f.UpAt[j]
	pf.StaleFrom = f.StaleFrom[j]
}

// ReasonCounts counts partitions per reason (catalog.Fresh included).
type ReasonCounts map[catalog.StaleReason]int64

// Stale sums every reason but Fresh.
func (c ReasonCounts) Stale() int64 {
	var n int64
	for r, k := range c {
		if r != catalog.Fresh {
			n += k
		}
	}
	return n
}

// reasonIndex numbers the reasons for counting in arrays.
func reasonIndex(r catalog.StaleReason) int {
	switch r {
	case catalog.NeverMaterialized:
		return 1
	case catalog.Tainted:
		return 2
	case catalog.CodeChanged:
		return 3
	case catalog.UpstreamChanged:
		return 4
	case catalog.FreshnessLate:
		return 5
	}
	return 0
}

var reasonByIndex = [6]catalog.StaleReason{catalog.Fresh, catalog.NeverMaterialized, catalog.Tainted, catalog.CodeChanged, catalog.UpstreamChanged, catalog.FreshnessLate}

func countsOf(a *[6]int64) ReasonCounts {
	out := make(ReasonCounts, 6)
	for i, n := range a {
		out[reasonByIndex[i]] = n
	}
	return out
}

// Counts counts the reasons of the partitions with index in [lo, hi]
// (partitions without a row are NEVER_MATERIALIZED). The result is shared:
// it must not be changed.
func (f *StaleFacts) Counts(lo, hi int64, now time.Time) ReasonCounts {
	if hi >= f.N {
		hi = f.N - 1
	}
	if lo > hi {
		var a [6]int64
		return countsOf(&a)
	}
	return f.memo(passCounts, lo, hi, 0, now, func(ms int64, until *int64) any {
		var a [6]int64
		code := f.Asset.CodeVersion
		var pf catalog.PartitionFacts
		j0 := f.lower(lo)
		j := j0
		for ; j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
			f.facts(j, &pf)
			r := catalog.Classify(&pf, code, ms)
			freshUntil(r, &pf, until)
			a[reasonIndex(r)]++
		}
		a[1] += (hi - lo + 1) - int64(j-j0)
		return countsOf(&a)
	}).(ReasonCounts)
}

// BucketCounts counts reasons in consecutive buckets of size partitions
// starting at lo, up to hi. The result is shared: it must not be changed.
func (f *StaleFacts) BucketCounts(lo, hi, size int64, now time.Time) []ReasonCounts {
	hi, n := f.buckets(lo, hi, size)
	if n == 0 {
		return nil
	}
	return f.memo(passBuckets, lo, hi, size, now, func(ms int64, until *int64) any {
		acc := make([][6]int64, n)
		missing := f.eachInBuckets(lo, hi, size, ms, func(b int64, pf *catalog.PartitionFacts, r catalog.StaleReason) {
			freshUntil(r, pf, until)
			acc[b][reasonIndex(r)]++
		})
		out := make([]ReasonCounts, n)
		for b := range out {
			acc[b][1] += missing[b]
			out[b] = countsOf(&acc[b])
		}
		return out
	}).([]ReasonCounts)
}

// Reason returns the reason of partition idx.
func (f *StaleFacts) Reason(idx int64, now time.Time) catalog.StaleReason {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return catalog.NeverMaterialized
	}
	var pf catalog.PartitionFacts
	f.facts(j, &pf)
	return catalog.Classify(&pf, f.Asset.CodeVersion, now.UnixMilli())
}

// Upstream returns the newest mapped upstream materialization of partition
// idx (asset and key resolved), or a zero fact.
func (f *StaleFacts) Upstream(idx int64) catalog.UpstreamFact {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx || f.upDep[j] < 0 {
		return catalog.UpstreamFact{}
	}
	d := f.upDep[j]
	return catalog.UpstreamFact{Asset: f.Asset.Deps[d].Asset, Key: f.upSpaces[d].Key(f.upIdx[j]), MatAt: f.UpAt[j]}
}

// StaleFromAt returns the freshness deadline of partition idx (NeverStale
// when it has no row).
func (f *StaleFacts) StaleFromAt(idx int64) int64 {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return catalog.NeverStale
	}
	return f.StaleFrom[j]
}

// LatestWhere returns the highest index whose reason is r, or -1.
func (f *StaleFacts) LatestWhere(r catalog.StaleReason, now time.Time) int64 {
	ms := now.UnixMilli()
	var pf catalog.PartitionFacts
	for j := len(f.base.Idx) - 1; j >= 0; j-- {
		if f.base.Idx[j] >= f.N {
			continue
		}
		f.facts(j, &pf)
		if catalog.Classify(&pf, f.Asset.CodeVersion, ms) == r {
			return f.base.Idx[j]
		}
	}
	return -1
}

// MatAtOf returns the last materialization time of partition idx (0: none).
func (f *StaleFacts) MatAtOf(idx int64) int64 {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx || f.base.Flags[j]&factMaterialized == 0 {
		return 0
	}
	return f.base.MatAt[j]
}

func (f *StaleFacts) lower(idx int64) int {
	return sort.Search(len(f.base.Idx), func(i int) bool { return f.base.Idx[i] >= idx })
}

// MaterializedStale counts partitions whose status is materialized but that
// are stale (any reason): the overview's stale segment.
func (f *StaleFacts) MaterializedStale(now time.Time) int64 {
	if f.N == 0 {
		return 0
	}
	return f.MaterializedStaleBuckets(0, f.N-1, f.N, now)[0]
}

// MaterializedStaleBuckets counts, for each bucket of size partitions from
// lo (the last one ends at hi), the materialized partitions that are stale
// at now: the status grids draw them as stale, like the header's bar. One
// pass over the materialized partitions of [lo, hi]. The result is shared:
// it must not be changed.
func (f *StaleFacts) MaterializedStaleBuckets(lo, hi, size int64, now time.Time) []int64 {
	if hi < lo || size <= 0 {
		return nil
	}
	return f.memo(passStaleBuckets, lo, hi, size, now, func(ms int64, until *int64) any {
		out := make([]int64, (hi-lo)/size+1)
		var pf catalog.PartitionFacts
		for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
			if i := f.base.Idx[j]; i >= f.N || f.base.Status[j] != stMaterialized {
				continue
			}
			f.facts(j, &pf)
			r := catalog.Classify(&pf, f.Asset.CodeVersion, ms)
			freshUntil(r, &pf, until)
			if r != catalog.Fresh {
				out[(f.base.Idx[j]-lo)/size]++
			}
		}
		return out
	}).([]int64)
}

// CodeVersionAt returns the code version partition idx was materialized with.
func (f *StaleFacts) CodeVersionAt(idx int64) string {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return ""
	}
	return f.base.Code[j]
}

// MaterializedBounds returns the lowest and highest index of a materialized
// partition (ok false when none is).
func (f *StaleFacts) MaterializedBounds() (first, last int64, ok bool) {
	first, last = -1, -1
	for j, i := range f.base.Idx {
		if i < f.N && f.base.Flags[j]&factMaterialized != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
}

// MissingRanges returns the ranges of indexes in [lo, hi] without a
// materialized partition, at most limit (truncated reports more).
func (f *StaleFacts) MissingRanges(lo, hi int64, limit int) (out []catalog.IndexRange, truncated bool) {
	hi = min(hi, f.N-1)
	next := lo
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		if f.base.Flags[j]&factMaterialized == 0 {
			continue
		}
		i := f.base.Idx[j]
		if i > next {
			if len(out) == limit {
				return out, true
			}
			out = append(out, catalog.IndexRange{Lo: next, Hi: i - 1})
		}
		next = i + 1
	}
	if next <= hi {
		if len(out) == limit {
			return out, true
		}
		out = append(out, catalog.IndexRange{Lo: next, Hi: hi})
	}
	return out, false
}

// StaleRanges returns the index ranges in [lo, hi] of partitions that are
// stale for any reason but NEVER_MATERIALIZED (with missing: for any
// reason), in order: what a "stale" backfill selection should snapshot.
func (f *StaleFacts) StaleRanges(lo, hi int64, now time.Time, missing bool) []catalog.IndexRange {
	hi = min(hi, f.N-1)
	var out []catalog.IndexRange
	add := func(a, b int64) {
		if a > b {
			return
		}
		if l := len(out); l > 0 && out[l-1].Hi+1 >= a {
			out[l-1].Hi = max(out[l-1].Hi, b)
			return
		}
		out = append(out, catalog.IndexRange{Lo: a, Hi: b})
	}
	ms := now.UnixMilli()
	var pf catalog.PartitionFacts
	next := lo
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		i := f.base.Idx[j]
		if missing {
			add(next, i-1)
		}
		next = i + 1
		f.facts(j, &pf)
		r := catalog.Classify(&pf, f.Asset.CodeVersion, ms)
		if r != catalog.Fresh && (missing || r != catalog.NeverMaterialized) {
			add(i, i)
		}
	}
	if missing {
		add(next, hi)
	}
	return out
}
