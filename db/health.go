package db

import (
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// Health counts the partitions with index in [lo, hi] per health
// (catalog.HealthOf): the one count behind the health bars, the staleness
// panel, the status board and its exports, the badges, the API and the CLI.
// Partitions without a row are missing.
func (f *StaleFacts) Health(lo, hi int64, now time.Time) catalog.HealthCounts {
	if hi >= f.N {
		hi = f.N - 1
	}
	if lo > hi {
		return catalog.HealthCounts{}
	}
	return f.HealthBuckets(lo, hi, hi-lo+1, now)[0]
}

// HealthBuckets is Health for consecutive buckets of size partitions from
// lo (the last one ends at hi): the grids' buckets count like the bars. One
// pass over the rows of [lo, hi].
func (f *StaleFacts) HealthBuckets(lo, hi, size int64, now time.Time) []catalog.HealthCounts {
	hi, n := f.buckets(lo, hi, size)
	if n == 0 {
		return nil
	}
	out := make([]catalog.HealthCounts, n)
	missing := f.eachInBuckets(lo, hi, size, now.UnixMilli(), func(b int64, pf *catalog.PartitionFacts, r catalog.StaleReason) {
		h, lastFailed := catalog.HealthOf(pf.LastAttempt, pf.Materialized, r)
		out[b].Add(h, r, lastFailed)
	})
	for b := range out {
		out[b].Missing += missing[b]
	}
	return out
}

// buckets is hi clipped to the partitions and how many buckets of size
// partitions cover [lo, hi] from lo (0: none).
func (f *StaleFacts) buckets(lo, hi, size int64) (int64, int64) {
	if hi >= f.N {
		hi = f.N - 1
	}
	if size <= 0 || hi < lo {
		return hi, 0
	}
	return hi, (hi-lo)/size + 1
}

// eachInBuckets calls row with the bucket (of size partitions from lo),
// the facts and the staleness reason at ms of each stored partition of
// [lo, hi] (hi clipped, see buckets), and answers how many partitions of
// each bucket have no stored row.
func (f *StaleFacts) eachInBuckets(lo, hi, size, ms int64, row func(b int64, pf *catalog.PartitionFacts, r catalog.StaleReason)) (missing []int64) {
	missing = make([]int64, (hi-lo)/size+1)
	for b := range missing {
		from := lo + int64(b)*size
		missing[b] = min(from+size-1, hi) - from + 1
	}
	code := f.Asset.CodeVersion
	var pf catalog.PartitionFacts
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		b := (f.base.Idx[j] - lo) / size
		f.facts(j, &pf)
		row(b, &pf, catalog.Classify(&pf, code, ms))
		missing[b]--
	}
	return missing
}

// HealthAt returns partition idx's health, its staleness reason and whether
// its last attempt failed while its data is still there.
func (f *StaleFacts) HealthAt(idx int64, now time.Time) (catalog.Health, catalog.StaleReason, bool) {
	j := f.lower(idx)
	if idx >= f.N || j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return catalog.HealthMissing, catalog.NeverMaterialized, false
	}
	var pf catalog.PartitionFacts
	f.facts(j, &pf)
	r := catalog.Classify(&pf, f.Asset.CodeVersion, now.UnixMilli())
	h, lastFailed := catalog.HealthOf(pf.LastAttempt, pf.Materialized, r)
	return h, r, lastFailed
}
