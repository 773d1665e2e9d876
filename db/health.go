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
	if hi >= f.N {
		hi = f.N - 1
	}
	if size <= 0 || hi < lo {
		return nil
	}
	n := (hi-lo)/size + 1
	out := make([]catalog.HealthCounts, n)
	rows := make([]int64, n)
	ms := now.UnixMilli()
	code := f.Asset.CodeVersion
	var pf catalog.PartitionFacts
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		b := (f.base.Idx[j] - lo) / size
		f.facts(j, &pf)
		r := catalog.Classify(&pf, code, ms)
		h, lastFailed := catalog.HealthOf(pf.LastAttempt, pf.Materialized, r)
		out[b].Add(h, r, lastFailed)
		rows[b]++
	}
	for b := range out {
		from := lo + int64(b)*size
		to := min(from+size-1, hi)
		out[b].Missing += (to - from + 1) - rows[b]
	}
	return out
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
