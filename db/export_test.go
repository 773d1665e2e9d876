package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// StaleReloads counts the full reloads of memoized base facts (a patch is
// not one).
func (s *Store) StaleReloads() int64 { return s.staleCache().reloads.Load() }

// SetPartitionScanLimit changes how many upstream partitions of one
// dependency PartitionStalenessAt scans in the store before it reads the
// memoized upstream facts instead, and returns the restore function.
func SetPartitionScanLimit(n int64) func() {
	old := partitionScanLimit
	partitionScanLimit = n
	return func() { partitionScanLimit = old }
}

// MigrateTo applies the embedded migrations to d up to version (tests of
// a migration start from the schema before it).
func MigrateTo(d *sql.DB, version int64) error {
	p, err := migrator(d, SQLite)
	if err != nil {
		return err
	}
	_, err = p.UpTo(context.Background(), version)
	return err
}

// Probes counts the probe writes a failing store has tried.
func (s *Store) Probes() int64 { return s.health.probes.Load() }

// WaitStaleBlocks waits until the background stores of staleness blocks
// are done.
func (s *Store) WaitStaleBlocks() { s.waitPersisted() }

// StaleBlocksDecoded counts the stored staleness blocks decoded by full
// loads (instead of reading their status rows).
func (s *Store) StaleBlocksDecoded() int64 { return s.staleCache().decoded.Load() }

// CheckStaleBlocks compares every stored staleness block with its status
// rows and returns a description of each difference, and how many blocks
// have stored facts.
func (s *Store) CheckStaleBlocks(ctx context.Context) (diffs []string, stored int, err error) {
	var blocks []struct {
		Asset int64  `db:"asset_id"`
		Block int64  `db:"block"`
		Facts []byte `db:"facts"`
	}
	if err := s.r.SelectContext(ctx, &blocks, `SELECT asset_id, block, facts FROM staleness_blocks WHERE facts IS NOT NULL ORDER BY asset_id, block`); err != nil {
		return nil, 0, err
	}
	for _, b := range blocks {
		lo := b.Block << staleBlockShift
		rows, err := s.loadRanges(ctx, b.Asset, "", [][2]int64{{lo, lo + 1<<staleBlockShift - 1}})
		if err != nil {
			return nil, 0, err
		}
		if want := encodeBlock(rows, b.Block, 0, len(rows.Idx)); string(want) != string(b.Facts) {
			got := &baseFacts{}
			_ = decodeBlock(b.Facts, b.Block, got, map[string]string{})
			diffs = append(diffs, fmt.Sprintf("asset %d block %d: stored %d rows %v, status rows %d %v", b.Asset, b.Block, len(got.Idx), got, len(rows.Idx), rows))
		}
	}
	// Blocks with status rows and no row in staleness_blocks are read from
	// their rows on every load: a write path that does not mark them.
	var unmarked int
	if err := s.r.GetContext(ctx, &unmarked, `SELECT COUNT(*) FROM (SELECT DISTINCT asset_id, idx >> ? AS block FROM partition_status WHERE idx >= 0) p
		WHERE NOT EXISTS (SELECT 1 FROM staleness_blocks b WHERE b.asset_id = p.asset_id AND b.block = p.block)`, staleBlockShift); err != nil {
		return nil, 0, err
	}
	if unmarked > 0 {
		diffs = append(diffs, fmt.Sprintf("%d blocks with status rows have no staleness_blocks row", unmarked))
	}
	return diffs, len(blocks), nil
}

// StaleMiscounted counts the full loads of staleness facts whose rows did
// not number what the rollup counts less the leased partitions (and so
// read every status row).
func (s *Store) StaleMiscounted() int64 { return s.staleCache().miscounted.Load() }

// StaleRevalidated counts the base entries found unchanged by their
// blocks' gens instead of reloaded.
func (s *Store) StaleRevalidated() int64 { return s.staleCache().revalidated.Load() }

// ExpandInstanceRanges turns asset assetID's instance ranges into instance
// rows (as a re-index does first), for tests that compare what readers
// answer from ranges with what they answer from rows.
func (s *Store) ExpandInstanceRanges(ctx context.Context, assetID int64) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error { return expandInstanceRanges(ctx, tx, assetID) })
}

// ExplodeStatusRanges turns asset assetID's status ranges into status rows
// and instance ranges (as a re-index does first), for tests that compare
// what readers answer from status ranges with what they answer from rows.
func (s *Store) ExplodeStatusRanges(ctx context.Context, assetID int64) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error { return explodeAllStatusRanges(ctx, tx, assetID) })
}

// AllInstances lists every instance, those status ranges hold included, by
// asset id, partition key and id.
func (s *Store) AllInstances(ctx context.Context) ([]Instance, error) {
	out, err := selectAll[Instance](ctx, s.r, `SELECT `+instanceCols+` FROM partition_instances`)
	if err != nil {
		return nil, err
	}
	rs, err := selectAll[statusRangeRow](ctx, s.r, `SELECT `+statusRangeCols+` FROM status_ranges`)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		ps, err := rs[i].parts(nil, rs[i].Lo, rs[i].Hi)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, p.instance(rs[i].AssetID))
		}
	}
	slices.SortFunc(out, func(a, b Instance) int {
		return cmp.Or(cmp.Compare(a.AssetID, b.AssetID), strings.Compare(a.Partition, b.Partition), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// StatusRangeCount counts the status ranges of every asset.
func (s *Store) StatusRangeCount(ctx context.Context) (int, error) {
	var n int
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM status_ranges`)
	return n, err
}

// RunListPlan is SQLite's plan of RunList's query for f (EXPLAIN QUERY
// PLAN, one line a step).
func (s *Store) RunListPlan(ctx context.Context, f RunFilter) ([]string, error) {
	q, args := runListQuery(f, 50)
	rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}

// ExecLater is execLater, for the tests of queued writes.
func ExecLater(ctx context.Context, tx *sqlx.Tx, q string, args ...any) error {
	return execLater(ctx, tx, q, args...)
}

// SetBetweenReads makes fn run between the reads of the status rows and
// of the status ranges of s's readers that have it (nil: nothing).
func (s *Store) SetBetweenReads(fn func()) { s.betweenReads = fn }

// FactIdxs returns the indexes of the partitions with facts that a
// staleness fact load of asset assetID reads in [lo, hi]: a whole load
// (loadRange) or a patch's (loadRanges).
func (s *Store) FactIdxs(ctx context.Context, assetID, lo, hi int64, patch bool) ([]int64, error) {
	var b *baseFacts
	var err error
	if patch {
		b, err = s.loadRanges(ctx, assetID, "", [][2]int64{{lo, hi}})
	} else {
		b, err = s.loadRange(ctx, assetID, "", lo, hi, 0)
	}
	if err != nil {
		return nil, err
	}
	return b.Idx, nil
}

// PartitionsPageBetween is PartitionsPage with between called between the
// read of its rows and the read of its holes, in the same snapshot.
func (s *Store) PartitionsPageBetween(ctx context.Context, assetID, after, size int64, stored []string, rows, missing bool, limit int, between func()) ([]PartitionStatus, []int64, error) {
	return s.partitionsPage(ctx, assetID, after, size, stored, rows, missing, limit, between)
}
