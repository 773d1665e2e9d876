package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// PartitionStaleness explains one partition: its facts from the status row
// (taint reason, code version), the newest mapped upstream materialization
// and the freshness deadline.
func (s *Store) PartitionStaleness(ctx context.Context, in StaleInput, a *catalog.Asset, key string, now time.Time) (catalog.Staleness, error) {
	v, err := s.SyncStaleness(ctx, in)
	if err != nil {
		return catalog.Staleness{}, err
	}
	return s.PartitionStalenessAt(ctx, in, a, key, now, v)
}

// PartitionStalenessAt is PartitionStaleness at a version returned by
// SyncStaleness (0: sync only if needed).
//
// It reads what one partition's staleness depends on and nothing more: its
// own status row and, per dependency, the newest materialization among the
// upstream partitions it reads (one scan of their index ranges), so that its
// cost grows neither with the asset nor with what was written since the
// last read. The memoized facts of the whole asset (StaleFacts) would be
// patched with every partition a running backfill wrote meanwhile, and the
// upstream facts of every row of the asset re-derived. A dependency reading
// more than partitionScanLimit upstream partitions (mapping all on a large
// upstream) takes its newest materialization from the memoized upstream
// facts at version instead.
func (s *Store) PartitionStalenessAt(ctx context.Context, in StaleInput, a *catalog.Asset, key string, now time.Time, version int64) (catalog.Staleness, error) {
	sp := in.SpaceOf(a)
	idx, err := sp.Index(key)
	if err != nil {
		return catalog.Staleness{}, err
	}
	pf := catalog.PartitionFacts{StaleFrom: catalog.NeverStale}
	st, err := s.Partition(ctx, in.IDs[a.Key], key)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return catalog.Staleness{}, err
	default:
		pf = st.Facts()
		if pf.Upstream, err = s.upstreamFact(ctx, in, a, sp, key, version); err != nil {
			return catalog.Staleness{}, err
		}
		if pf.Materialized && a.Freshness != nil {
			var end time.Time
			ends, hasWin := catalog.WindowEnds(a.Scheme, sp)
			if hasWin {
				end = ends(idx)
			}
			pf.StaleFrom = a.Freshness.StaleFrom(end, hasWin, pf.MatAt)
		}
	}
	return catalog.Explain(pf, a.CodeVersion, a.Freshness, now), nil
}

// partitionScanLimit bounds the upstream partitions of one dependency that
// PartitionStalenessAt scans in the store; beyond it the memoized upstream
// facts are scanned in memory (a variable for tests).
var partitionScanLimit int64 = 50_000

// upstreamFact returns the newest materialization among the upstream
// partitions that partition key of a reads, as StaleFacts.Upstream does:
// the newest time over every dependency, on a tie the first dependency and
// its lowest upstream index.
func (s *Store) upstreamFact(ctx context.Context, in StaleInput, a *catalog.Asset, sp catalog.Space, key string, version int64) (catalog.UpstreamFact, error) {
	var best catalog.UpstreamFact
	for _, dep := range a.Deps {
		up := in.WS.Asset(dep.Asset)
		if up == nil {
			return best, fmt.Errorf("asset %s depends on undeclared asset %s", a.Key, dep.Asset)
		}
		usp := in.SpaceOf(up)
		// Like the mapper of the full computation, a key the mapping cannot
		// place reads nothing.
		rs, err := catalog.UpstreamOf(dep, a.Scheme, sp, up.Scheme, usp, key)
		if err != nil || len(rs) == 0 {
			continue
		}
		u, at := int64(-1), int64(0)
		if catalog.CountRanges(rs) > partitionScanLimit {
			if version == 0 {
				if version, err = s.SyncStaleness(ctx, in); err != nil {
					return best, err
				}
			}
			ub, err := s.baseFactsAt(ctx, in.IDs[up.Key], up.CodeVersion, usp, version)
			if err != nil {
				return best, err
			}
			u, at = ub.newestIn(rs)
		} else if u, at, err = s.newestMaterialized(ctx, in.IDs[up.Key], rs); err != nil {
			return best, err
		}
		if u >= 0 && at > best.MatAt {
			best = catalog.UpstreamFact{Asset: dep.Asset, Key: usp.Key(u), MatAt: at}
		}
	}
	return best, nil
}

// newestIn returns the lowest index of the newest materialization in rs
// (-1 when none has a time).
func (b *baseFacts) newestIn(rs []catalog.IndexRange) (u, at int64) {
	u = -1
	for _, r := range rs {
		j := sort.Search(len(b.Idx), func(i int) bool { return b.Idx[i] >= r.Lo })
		for ; j < len(b.Idx) && b.Idx[j] <= r.Hi; j++ {
			if b.Flags[j]&factMaterialized == 0 {
				continue
			}
			if t := b.MatAt[j]; t > at || (t == at && t > 0 && b.Idx[j] < u) {
				u, at = b.Idx[j], t
			}
		}
	}
	return u, at
}

// newestMaterialized is newestIn read from the store: one query through the
// covering staleness index, one seek per range.
func (s *Store) newestMaterialized(ctx context.Context, assetID int64, rs []catalog.IndexRange) (u, at int64, err error) {
	pairs := make([][2]int64, len(rs))
	for i, r := range rs {
		pairs[i] = [2]int64{r.Lo, r.Hi}
	}
	js, err := json.Marshal(pairs)
	if err != nil {
		return -1, 0, err
	}
	var row struct {
		Idx int64 `db:"idx"`
		At  int64 `db:"at"`
	}
	from, within := rangesJoin(s.dialect)
	err = s.r.GetContext(ctx, &row, `SELECT ps.idx AS idx, ps.last_mat_at AS at
		FROM `+from+`
		WHERE ps.asset_id = ? AND `+within+`
			AND ps.materialized = 1 AND ps.last_mat_at > 0
		ORDER BY ps.last_mat_at DESC, ps.idx LIMIT 1`, string(js), assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, 0, nil
	}
	if err != nil {
		return -1, 0, err
	}
	return row.Idx, row.At, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Facts are the staleness facts of the partition's own row (materialized,
// when, with which code version, tainted, last attempt); upstream and
// StaleFrom are left to the caller (StaleFrom: never).
func (st PartitionStatus) Facts() catalog.PartitionFacts {
	pf := catalog.PartitionFacts{StaleFrom: catalog.NeverStale, Materialized: st.Materialized, LastAttempt: st.Status}
	if st.LastMatAt != nil {
		pf.MatAt = *st.LastMatAt
	}
	if st.LastMatCodeVersion != nil {
		pf.CodeVersion = *st.LastMatCodeVersion
	}
	if st.TaintedAt != nil {
		pf.TaintedAt = *st.TaintedAt
		pf.TaintReason = deref(st.TaintReason)
	}
	return pf
}

// LastAttemptFailed reports whether the asset's most recent attempt failed.
func (s *Store) LastAttemptFailed(ctx context.Context, assetID int64) (bool, error) {
	var st sql.NullString
	err := s.r.GetContext(ctx, &st, `SELECT last_attempt_status FROM assets WHERE id=?`, assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return st.String == StatusFailed, err
}
