package db

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/jmoiron/sqlx"
)

// StatusRows reads the stored status of partitions of an asset (key → status)
// inside tx, for keys in [lo, hi] when contiguous, or by key. A partition a
// running attempt leases without a row is in progress.
func StatusRows(ctx context.Context, tx *sqlx.Tx, assetID, lo, hi int64) (map[string]string, error) {
	out, err := StoredStatusRows(ctx, tx, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	ls, err := loadLeases(ctx, tx, assetID, lo, hi)
	for _, l := range ls {
		out[l.Key] = StatusInProgress
	}
	return out, err
}

// StoredStatusRows is StatusRows without the partitions leased without a
// row: for the planner, which reads those once a step (LeasedKeys).
func StoredStatusRows(ctx context.Context, tx *sqlx.Tx, assetID, lo, hi int64) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT partition_key, status FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ?`, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, s string
		if err := rows.Scan(&k, &s); err != nil {
			return nil, err
		}
		out[k] = s
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Partitions status ranges hold read as materialized rows.
	rs, err := loadRanges(ctx, tx, assetID, lo, hi, 0)
	for _, r := range rs {
		out[r.Key] = StatusMaterialized
	}
	return out, err
}

// Leases are the leases of an asset's running attempts on partitions
// without a status row, read once (ReadLeases) for the planner's step: an
// attempt's partitions are decoded only when a chunk's index range meets
// its lease's.
type Leases struct {
	rows  []leaseRow
	parts [][]leasedPart // decoded rows[i], nil until asked for
}

// ReadLeases reads the leases of asset assetID's running attempts.
func ReadLeases(ctx context.Context, q Querier, assetID int64) (*Leases, error) {
	l := &Leases{}
	if err := q.SelectContext(ctx, &l.rows, `SELECT run_id, attempt, started_at, lease, lease_lo, lease_hi FROM attempts
		WHERE state='running' AND asset_id=? AND lease IS NOT NULL`, assetID); err != nil {
		return nil, err
	}
	l.parts = make([][]leasedPart, len(l.rows))
	return l, nil
}

// Leased reports which of keys, partitions with index in [lo, hi], a
// running attempt leases without a status row (in progress, as StatusRows
// reads them).
func (l *Leases) Leased(keys []string, lo, hi int64) (map[string]bool, error) {
	out := map[string]bool{}
	var want map[string]bool
	for i, r := range l.rows {
		if r.Lo > hi || r.Hi < lo {
			continue
		}
		if l.parts[i] == nil {
			ps, _, err := r.parts(math.MinInt64, math.MaxInt64)
			if err != nil {
				return nil, err
			}
			l.parts[i] = ps
		}
		if want == nil {
			want = make(map[string]bool, len(keys))
			for _, k := range keys {
				want[k] = true
			}
		}
		for _, p := range l.parts[i] {
			if want[p.Key] {
				out[p.Key] = true
			}
		}
	}
	return out, nil
}

// RunCheckpoint is what a new attempt of a run may skip and what it must
// not count twice.
type RunCheckpoint struct {
	// Done: partitions materialized since the run started, by it or by
	// anyone else, and not tainted since: a retry does not build them again.
	Done map[string]bool
	// Built: partitions an earlier attempt of the run materialized; when one
	// is built again (tainted or failed since), it is not counted twice.
	Built map[string]bool
}

// RunCheckpoint is RunCheckpointOf on a reader, its reads in one snapshot:
// a status range turned into rows between them (a report, a taint) would
// leave its partitions in none of them.
func (s *Store) RunCheckpoint(ctx context.Context, assetID int64, runID string, since int64, keys []string) (RunCheckpoint, error) {
	var cp RunCheckpoint
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var err error
		cp, err = runCheckpointOf(ctx, q, assetID, runID, since, keys, s.betweenReads)
		return err
	})
	return cp, err
}

// RunCheckpointOf reads the checkpoint of run (which started at since) over
// keys, partitions of asset, in q (the engine's transaction).
func RunCheckpointOf(ctx context.Context, q getter, assetID int64, runID string, since int64, keys []string) (RunCheckpoint, error) {
	return runCheckpointOf(ctx, q, assetID, runID, since, keys, nil)
}

// runCheckpointOf is RunCheckpointOf; between, when not nil (a test's
// Store.betweenReads), runs between its reads of rows and of ranges.
func runCheckpointOf(ctx context.Context, q getter, assetID int64, runID string, since int64, keys []string, between func()) (RunCheckpoint, error) {
	var cp RunCheckpoint
	var err error
	cp.Done, err = keysWhere(ctx, q, `SELECT partition_key FROM partition_status WHERE asset_id=? AND partition_key IN (%s)
		AND status='materialized' AND tainted_at IS NULL AND (last_mat_run_id=? OR last_mat_at>=?)`, assetID, keys, runID, since)
	if err != nil {
		return cp, err
	}
	cp.Built, err = keysWhere(ctx, q, `SELECT DISTINCT partition_key FROM partition_instances WHERE asset_id=? AND partition_key IN (%s)
		AND run_id=? AND status='materialized'`, assetID, keys, runID)
	if err != nil {
		return cp, err
	}
	if between != nil {
		between()
	}
	// Partitions status ranges hold: materialized, never tainted, by
	// their range's attempt.
	rs, err := rangesByKey(ctx, q, assetID, keys)
	for k, r := range rs {
		if r.RunID == runID || r.finished >= since {
			cp.Done[k] = true
		}
		if r.RunID == runID {
			cp.Built[k] = true
		}
	}
	return cp, err
}

// MaterializedByOthers returns which of keys (partitions of asset) someone
// other than run materialized while the run lasted (from since to until,
// ms), and not tainted since: key → the run id that built it. The rows
// and the status ranges are read in one snapshot (a range turned into
// rows between two reads would be in neither).
func (s *Store) MaterializedByOthers(ctx context.Context, assetID int64, runID string, since, until int64, keys []string) (map[string]string, error) {
	out := map[string]string{}
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		for len(keys) > 0 {
			k := min(len(keys), batchRows)
			args := []any{assetID}
			for _, key := range keys[:k] {
				args = append(args, key)
			}
			var got []struct {
				Key string `db:"partition_key"`
				Run string `db:"last_mat_run_id"`
			}
			if err := q.SelectContext(ctx, &got, `SELECT partition_key, COALESCE(last_mat_run_id, '') AS last_mat_run_id FROM partition_status
				WHERE asset_id=? AND partition_key IN (?`+strings.Repeat(",?", k-1)+`) AND status='materialized' AND tainted_at IS NULL
				AND last_mat_at BETWEEN ? AND ? AND COALESCE(last_mat_run_id, '')!=?`, append(args, since, until, runID)...); err != nil {
				return err
			}
			for _, g := range got {
				if g.Run == "" {
					g.Run = "a report"
				}
				out[g.Key] = g.Run
			}
			if s.betweenReads != nil {
				s.betweenReads()
			}
			rs, err := rangesByKey(ctx, q, assetID, keys[:k])
			if err != nil {
				return err
			}
			for key, r := range rs {
				if r.finished >= since && r.finished <= until && r.RunID != runID {
					out[key] = r.RunID
				}
			}
			keys = keys[k:]
		}
		return nil
	})
	return out, err
}

// FailedByRun returns which of keys (partitions of asset) are failed by the
// last attempt of run.
func FailedByRun(ctx context.Context, q getter, assetID int64, runID string, keys []string) (map[string]bool, error) {
	return keysWhere(ctx, q, `SELECT partition_key FROM partition_status WHERE asset_id=? AND partition_key IN (%s)
		AND status='failed' AND last_attempt_run_id=?`, assetID, keys, runID)
}

// keysWhere runs query (one row per partition key it selects) over keys in
// batches: its placeholders are the asset id, the batch's keys in place of
// %s, then after.
func keysWhere(ctx context.Context, q getter, query string, assetID int64, keys []string, after ...any) (map[string]bool, error) {
	out := map[string]bool{}
	for len(keys) > 0 {
		k := min(len(keys), batchRows)
		args := make([]any, 0, k+1+len(after))
		args = append(args, assetID)
		for _, key := range keys[:k] {
			args = append(args, key)
		}
		var got []string
		if err := q.SelectContext(ctx, &got, fmt.Sprintf(query, "?"+strings.Repeat(",?", k-1)), append(args, after...)...); err != nil {
			return nil, err
		}
		for _, g := range got {
			out[g] = true
		}
		keys = keys[k:]
	}
	return out, nil
}

// InProgressInstances returns which of the instances ids[i] of partitions
// keys[i] of an asset are still in progress: their status row holds the
// lease for them, or their running attempt leases them without a row.
func InProgressInstances(ctx context.Context, q getter, assetID int64, keys, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	leased, err := leasesByKey(ctx, q, assetID, keys)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if l, ok := leased[k]; ok && i < len(ids) && l.InstanceID() == ids[i] {
			out[ids[i]] = true
		}
	}
	for len(ids) > 0 {
		k := min(len(ids), batchRows)
		args := make([]any, 0, 2*k+1)
		args = append(args, assetID)
		for _, key := range keys[:k] {
			args = append(args, key)
		}
		for _, id := range ids[:k] {
			args = append(args, id)
		}
		marks := strings.Repeat(",?", k-1)
		var got []string
		if err := q.SelectContext(ctx, &got, `SELECT lease_instance_id FROM partition_status WHERE asset_id=? AND partition_key IN (?`+marks+`)
			AND status='in_progress' AND lease_instance_id IN (?`+marks+`)`, args...); err != nil {
			return nil, err
		}
		for _, g := range got {
			out[g] = true
		}
		keys, ids = keys[k:], ids[k:]
	}
	return out, nil
}
