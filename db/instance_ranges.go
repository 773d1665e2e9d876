package db

import (
	"cmp"
	"context"
	"slices"

	"github.com/jmoiron/sqlx"
)

// Instances per attempt as index ranges (migration 25). A partition that an
// engine attempt materialized plainly (no metadata, no error) gets no
// instance row: its attempt writes one instance_ranges row per run of
// consecutive partition indexes within a block of 1,024, and the
// partition's instance is derived from that row and the partition's status
// row (its key, at an index in [lo, hi]; its id from the attempt,
// AttemptInstanceIDs). A chunk of 100 consecutive partitions is one or two
// rows instead of 100. partition_instances is a view of instance_rows (every
// other instance) and instance_ranges_expanded, with the columns of the
// former table: readers read it as before.
//
// What keeps a range right: every partition in it has a status row at that
// index, written in the same transaction (applyFinished) and never deleted
// while the asset exists (giveBack deletes only the in-progress row of a
// partition that had none before its attempt, which therefore has no
// range); a re-index turns the asset's ranges into rows first
// (expandInstanceRanges), and an attempt running while its asset is
// re-indexed (attempts.reindexed) records its instances as rows.

// attemptInstanceID is tessera_instance_id(run, attempt, asset, partition):
// the id of the instance that attempt attempt of run builds of asset's
// partition (AttemptInstanceIDs).
func attemptInstanceID(runID string, attempt int64, asset, partition string) string {
	return AttemptInstanceIDs(runID, attempt, asset)(partition)
}

// rangeBlockShift: a range never crosses a block of 1 << rangeBlockShift
// indexes, so that the ranges holding an index are found by its block.
const rangeBlockShift = 10

// rangedInst is a partition materialized plainly whose instance is recorded
// in a range.
type rangedInst struct {
	run     string
	attempt int64
	asset   string // the asset's key, from which ids are derived
	started int64
	idx     int64
}

// insertInstanceRanges records the instances of items (of one asset and
// code version, finished at at, each attempt's together) as instance_ranges
// rows: one per run of consecutive indexes of one attempt within one block.
// It sorts each attempt's items by index, in place.
func insertInstanceRanges(ctx context.Context, tx *sqlx.Tx, assetID int64, code string, at int64, items []rangedInst) error {
	if len(items) == 0 {
		return nil
	}
	// One attempt's partitions follow each other (applyFinished gathers
	// them attempt by attempt), in index order for a chunk of a range; an
	// attempt's that are not are sorted by index (in place: items is the
	// caller's own).
	sortEachAttempt(items, func(a, b rangedInst) bool { return a.run == b.run && a.attempt == b.attempt }, rangedByIdx)
	args := make([]any, 0, 7*len(items)/8+7)
	for lo := 0; lo < len(items); {
		first := items[lo]
		hi := lo + 1
		for hi < len(items) && items[hi].run == first.run && items[hi].attempt == first.attempt &&
			items[hi].idx == items[hi-1].idx+1 && items[hi].idx>>rangeBlockShift == first.idx>>rangeBlockShift {
			hi++
		}
		args = append(args, first.idx>>rangeBlockShift, first.idx, items[hi-1].idx, first.run, first.attempt, first.asset, first.started)
		lo = hi
	}
	return batchExec(ctx, tx, `INSERT INTO instance_ranges (asset_id, block, lo, hi, run_id, attempt, asset_key, code_version, started_at, finished_at)
		SELECT ?, column1, column2, column3, column4, column5, column6, ?, column7, ? FROM (VALUES `, []any{assetID, code, at},
		`(?,?,?,?,?,?,?)`, `)`, 7, args)
}

// rangedByIdx orders ranged instances by index.
func rangedByIdx(a, b rangedInst) int { return cmp.Compare(a.idx, b.idx) }

// attemptKey is one attempt of a run.
type attemptKey struct {
	run     string
	attempt int64
}

// instanceRecording says how a finishing step records instances, in one
// statement (a round trip a step on PostgreSQL): open, whether any instance
// row is still open (recorded in progress by a version before migration
// 11): an event that could end one records its instances as rows, which
// completes them in place; and reindexed, the running attempts whose asset
// was re-indexed while they ran (reindexAsset), read through the partial
// index of running attempts: usually none. The open flag comes as a row of
// attempt -1.
func instanceRecording(ctx context.Context, tx *sqlx.Tx) (open bool, reindexed map[attemptKey]bool, err error) {
	var rows []struct {
		Run     string `db:"run_id"`
		Attempt int64  `db:"attempt"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT run_id, attempt FROM attempts WHERE state = 'running' AND reindexed = 1
		UNION ALL SELECT '', -1 WHERE EXISTS (SELECT 1 FROM instance_rows WHERE status = 'in_progress')`); err != nil {
		return false, nil, err
	}
	reindexed = make(map[attemptKey]bool, len(rows))
	for _, r := range rows {
		if r.Attempt == -1 {
			open = true
			continue
		}
		reindexed[attemptKey{r.Run, r.Attempt}] = true
	}
	return open, reindexed, nil
}

// expandInstanceRanges turns asset assetID's instance ranges into instance
// rows, before a re-index moves its status rows to other indexes.
func expandInstanceRanges(ctx context.Context, tx *sqlx.Tx, assetID int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO instance_rows (`+instanceCols+`)
		SELECT `+instanceCols+` FROM instance_ranges_expanded WHERE asset_id = ?`, assetID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM instance_ranges WHERE asset_id = ?`, assetID)
	return err
}

// sortEachAttempt sorts by index (byIdx), in place, each run of items of
// one attempt (sameAttempt) that is not in index order: applyFinished
// gathers an attempt's partitions together, in index order for a chunk of
// a range, but a chunk of explicit keys need not be.
func sortEachAttempt[T any](items []T, sameAttempt func(a, b T) bool, byIdx func(a, b T) int) {
	for lo := 0; lo < len(items); {
		hi := lo + 1
		for hi < len(items) && sameAttempt(items[hi], items[lo]) {
			hi++
		}
		if part := items[lo:hi]; !slices.IsSortedFunc(part, byIdx) {
			slices.SortStableFunc(part, byIdx)
		}
		lo = hi
	}
}
