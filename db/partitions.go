package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/jmoiron/sqlx"
)

// RollupShift: partition_rollup counts rows per block of 1<<RollupShift indexes.
const RollupShift = 10

// RollupBlock is the number of partition indexes per rollup block.
const RollupBlock = 1 << RollupShift

// Display statuses. A partition without a status row is missing.
const (
	StatusMaterialized = "materialized"
	StatusFailed       = "failed"
	StatusInProgress   = "in_progress"
	StatusMissing      = "missing"
)

// Statuses lists the display statuses in legend order.
var Statuses = []string{StatusMaterialized, StatusFailed, StatusInProgress, StatusMissing}

// PartitionStatus is one asset partition's projection row.
type PartitionStatus struct {
	AssetID            int64   `db:"asset_id"`
	Key                string  `db:"partition_key"`
	Idx                int64   `db:"idx"`
	Status             string  `db:"status"`
	Materialized       bool    `db:"materialized"`
	LastMatInstanceID  *string `db:"last_mat_instance_id"`
	LastMatRunID       *string `db:"last_mat_run_id"`
	LastMatAt          *int64  `db:"last_mat_at"`
	LastMatCodeVersion *string `db:"last_mat_code_version"`
	LastMatMetadata    *string `db:"last_mat_metadata"`
	// LastAttemptInstanceID and LastAttemptRunID are stored only when the
	// last attempt did not materialize: a materialized last attempt is the
	// last materialization, whose ids the row already holds (fill).
	LastAttemptInstanceID *string `db:"last_attempt_instance_id"`
	LastAttemptRunID      *string `db:"last_attempt_run_id"`
	LastAttemptAt         *int64  `db:"last_attempt_at"`
	LastAttemptStatus     *string `db:"last_attempt_status"`
	LastAttemptError      *string `db:"last_attempt_error"`
	// CanonicalInstanceID is the instance the partition's data comes from:
	// always the last materialized one (fill), so it is not stored.
	CanonicalInstanceID *string `db:"-"`
	TaintedAt           *int64  `db:"tainted_at"`
	TaintReason         *string `db:"taint_reason"`
	UpdatedAt           int64   `db:"updated_at"`
	// LeaseInstanceID is the instance building the partition while Status
	// is in_progress (the lease); nil otherwise.
	LeaseInstanceID *string `db:"lease_instance_id" json:"-"`
	// LeaseRunID and LeaseCodeVersion: the run building the partition and
	// its code version, while it is in progress (its instance is recorded
	// when the attempt ends).
	LeaseRunID       *string `db:"lease_run_id" json:"-"`
	LeaseCodeVersion *string `db:"lease_code_version" json:"-"`
}

// fill restores the ids a status row does not store twice (see
// PartitionStatus). Every reader of partition_status rows calls it.
func (p *PartitionStatus) fill() {
	if p.LastAttemptStatus != nil && *p.LastAttemptStatus == StatusMaterialized {
		if p.LastAttemptInstanceID == nil {
			p.LastAttemptInstanceID = p.LastMatInstanceID
		}
		if p.LastAttemptRunID == nil {
			p.LastAttemptRunID = p.LastMatRunID
		}
	}
	p.CanonicalInstanceID = p.LastMatInstanceID
}

func fillAll(rows []PartitionStatus) []PartitionStatus {
	for i := range rows {
		rows[i].fill()
	}
	return rows
}

// Counts maps a display status to a number of partitions.
type Counts map[string]int64

// Total sums every status.
func (c Counts) Total() int64 {
	var t int64
	for _, n := range c {
		t += n
	}
	return t
}

// AssetCounts returns, per asset id, the number of partitions per stored status
// (missing is the space size minus the total; the caller knows the size).
func (s *Store) AssetCounts(ctx context.Context) (map[int64]Counts, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT asset_id, status, SUM(n) FROM partition_rollup GROUP BY asset_id, status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]Counts{}
	for rows.Next() {
		var id, n int64
		var st string
		if err := rows.Scan(&id, &st, &n); err != nil {
			return nil, err
		}
		if out[id] == nil {
			out[id] = Counts{}
		}
		out[id][st] += n
	}
	return out, rows.Err()
}

// BucketCounts splits the index range [lo, hi] into consecutive buckets of
// size partitions and counts stored statuses in each. When lo and size are
// multiples of RollupBlock it reads the rollup table (cost independent of the
// number of partitions); otherwise it scans the range's rows.
func (s *Store) BucketCounts(ctx context.Context, assetID, lo, hi, size int64) ([]Counts, error) {
	if size <= 0 || hi < lo {
		return nil, fmt.Errorf("bad bucket range [%d,%d] size %d", lo, hi, size)
	}
	n := (hi-lo)/size + 1
	out := make([]Counts, n)
	for i := range out {
		out[i] = Counts{}
	}
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		return bucketCounts(ctx, q, out, assetID, lo, hi, size)
	})
	return out, err
}

// bucketCounts is BucketCounts in q's snapshot: it adds to out.
func bucketCounts(ctx context.Context, q *sqlx.Conn, out []Counts, assetID, lo, hi, size int64) error {
	n := int64(len(out))
	var rows *sql.Rows
	var err error
	scanLo := hi + 1 // the partitions from scanLo to hi are counted from their rows
	if lo%RollupBlock == 0 && size%RollupBlock == 0 && (hi+1)%RollupBlock == 0 {
		rows, err = q.QueryContext(ctx, `SELECT (block - ?) / ?, status, SUM(n) FROM partition_rollup
			WHERE asset_id=? AND block BETWEEN ? AND ? GROUP BY 1, 2`,
			lo>>RollupShift, size>>RollupShift, assetID, lo>>RollupShift, hi>>RollupShift)
	} else if lo%RollupBlock == 0 && size%RollupBlock == 0 {
		// Full blocks from the rollup, the last partial block scanned.
		lastFull := (hi+1)/RollupBlock - 1
		scanLo = (lastFull + 1) * RollupBlock
		rows, err = q.QueryContext(ctx, `SELECT (block - ?) / ?, status, SUM(n) FROM partition_rollup
			WHERE asset_id=? AND block BETWEEN ? AND ? GROUP BY 1, 2
			UNION ALL
			SELECT (idx - ?) / ?, status, COUNT(*) FROM partition_status
			WHERE asset_id=? AND idx BETWEEN ? AND ? GROUP BY 1, 2`,
			lo>>RollupShift, size>>RollupShift, assetID, lo>>RollupShift, lastFull,
			lo, size, assetID, (lastFull+1)*RollupBlock, hi)
	} else {
		scanLo = lo
		rows, err = q.QueryContext(ctx, `SELECT (idx - ?) / ?, status, COUNT(*) FROM partition_status
			WHERE asset_id=? AND idx BETWEEN ? AND ? GROUP BY 1, 2`, lo, size, assetID, lo, hi)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b, c int64
		var st string
		if err := rows.Scan(&b, &st, &c); err != nil {
			return err
		}
		if b >= 0 && b < n {
			out[b][st] += c
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if scanLo > hi {
		return nil // the rollup counts leased partitions in progress, and those status ranges hold
	}
	ls, err := loadLeases(ctx, q, assetID, scanLo, hi)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if b := (l.Idx - lo) / size; b >= 0 && b < n {
			out[b][StatusInProgress]++
		}
	}
	spans, err := rangeSpans(ctx, q, assetID, scanLo, hi)
	for _, r := range spans {
		for a := r.Lo; a <= r.Hi; {
			b := (a - lo) / size
			end := min(r.Hi, lo+(b+1)*size-1)
			if b >= 0 && b < n {
				out[b][StatusMaterialized] += end - a + 1
			}
			a = end + 1
		}
	}
	return err
}

// StatusRange returns the status rows of an asset with index in [lo, hi],
// ordered by index.
func (s *Store) StatusRange(ctx context.Context, assetID, lo, hi int64) ([]PartitionStatus, error) {
	var out []PartitionStatus
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		if err := q.SelectContext(ctx, &out, `SELECT * FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, assetID, lo, hi); err != nil {
			return err
		}
		ls, err := loadStanding(ctx, q, assetID, lo, hi)
		out = mergeLeaseRows(assetID, fillAll(out), ls)
		return err
	})
	return out, err
}

// Partition returns one partition's status row, or ErrNotFound when the
// partition was never attempted.
func (s *Store) Partition(ctx context.Context, assetID int64, key string) (PartitionStatus, error) {
	var p PartitionStatus
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		err := q.GetContext(ctx, &p, `SELECT * FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, key)
		if !errors.Is(err, sql.ErrNoRows) {
			p.fill()
			return err
		}
		ls, err := standingByKey(ctx, q, assetID, []string{key})
		if err != nil {
			return err
		}
		l, ok := ls[key]
		if !ok {
			return ErrNotFound
		}
		p = l.row(assetID)
		return nil
	})
	return p, err
}

// PartitionsAfter lists status rows with index > after whose status is one of
// statuses (all stored statuses when empty), in index order.
func (s *Store) PartitionsAfter(ctx context.Context, assetID, after int64, statuses []string, limit int) ([]PartitionStatus, error) {
	rows, _, err := s.PartitionsPage(ctx, assetID, after, 0, statuses, true, false, limit)
	return rows, err
}

// PartitionsPage is a page of an asset's partitions list after index
// after: up to limit status rows whose status is one of stored (every
// stored status when empty; none when !rows), as PartitionsAfter, and,
// when missing, up to limit indexes below size of partitions without one,
// as MissingAfter. Both are read in one snapshot: read apart, a partition
// that a starting attempt leases between the two reads is in neither (the
// list skipped the chunk being started).
func (s *Store) PartitionsPage(ctx context.Context, assetID, after, size int64, stored []string, rows, missing bool, limit int) ([]PartitionStatus, []int64, error) {
	return s.partitionsPage(ctx, assetID, after, size, stored, rows, missing, limit, nil)
}

// partitionsPage is PartitionsPage; between, when not nil, is called
// between the rows' read and the holes' (tests write there).
func (s *Store) partitionsPage(ctx context.Context, assetID, after, size int64, stored []string, rows, missing bool, limit int, between func()) ([]PartitionStatus, []int64, error) {
	var out []PartitionStatus
	var holes []int64
	err := s.snapshot(ctx, func(c *sqlx.Conn) error {
		var err error
		if rows {
			if out, err = partitionsAfter(ctx, c, assetID, after, stored, limit); err != nil {
				return err
			}
		}
		if between != nil {
			between()
		}
		if missing {
			holes, err = missingIn(ctx, c, assetID, after, size, limit)
		}
		return err
	})
	return out, holes, err
}

// partitionsAfter is PartitionsAfter in c's snapshot.
func partitionsAfter(ctx context.Context, c *sqlx.Conn, assetID, after int64, statuses []string, limit int) ([]PartitionStatus, error) {
	q := `SELECT * FROM partition_status WHERE asset_id=? AND idx > ?`
	args := []any{assetID, after}
	q, args = andIn(q, args, "status", statuses)
	q += ` ORDER BY idx LIMIT ?`
	args = append(args, limit)
	var out []PartitionStatus
	if err := c.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, err
	}
	out = fillAll(out)
	all := len(statuses) == 0
	leases, ranges := all || slices.Contains(statuses, StatusInProgress), all || slices.Contains(statuses, StatusMaterialized)
	if !leases && !ranges {
		return out, nil
	}
	// Leases and ranges past the page's last row cannot be on the page.
	hi := int64(math.MaxInt64)
	if len(out) >= limit && limit > 0 {
		hi = out[limit-1].Idx
	}
	var ls []leasedPart
	if leases {
		var err error
		if ls, err = firstLeases(ctx, c, assetID, after+1, hi, limit); err != nil {
			return nil, err
		}
	}
	if ranges {
		rs, err := loadRanges(ctx, c, assetID, after+1, hi, limit)
		if err != nil {
			return nil, err
		}
		ls = mergeByIdx(ls, rs)
	}
	return mergeFirstLeaseRows(assetID, out, ls, limit), nil
}

// IdxStatus is a partition's index with its stored status.
type IdxStatus struct {
	Idx          int64  `db:"idx"`
	Status       string `db:"status"`
	Materialized bool   `db:"materialized"`
}

// StatusesAt reads the stored statuses of the partitions at idxs (any order)
// in batches, a few queries for thousands of partitions; partitions without a
// row (missing) are absent from the answer.
func (s *Store) StatusesAt(ctx context.Context, assetID int64, idxs []int64) ([]IdxStatus, error) {
	var out []IdxStatus
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var err error
		out, err = statusesAt(ctx, q, assetID, idxs)
		return err
	})
	return out, err
}

// statusesAt is StatusesAt in q's snapshot.
func statusesAt(ctx context.Context, q *sqlx.Conn, assetID int64, idxs []int64) ([]IdxStatus, error) {
	const batch = 500
	var out []IdxStatus
	if len(idxs) > 0 {
		ls, err := allLeases(ctx, q, assetID)
		if err != nil {
			return nil, err
		}
		if len(ls) > 0 {
			want := make(map[int64]bool, len(idxs))
			for _, i := range idxs {
				want[i] = true
			}
			for _, l := range ls {
				if want[l.Idx] {
					out = append(out, IdxStatus{Idx: l.Idx, Status: StatusInProgress})
				}
			}
		}
	}
	if len(idxs) > 0 {
		// Partitions status ranges hold: materialized.
		lo, hi := slices.Min(idxs), slices.Max(idxs)
		spans, err := rangeSpans(ctx, q, assetID, lo, hi)
		if err != nil {
			return nil, err
		}
		if len(spans) > 0 {
			for _, i := range idxs {
				j, _ := slices.BinarySearchFunc(spans, i, func(r statusRangeRow, i int64) int { return cmp.Compare(r.Hi, i) })
				if j < len(spans) && spans[j].Lo <= i {
					out = append(out, IdxStatus{Idx: i, Status: StatusMaterialized, Materialized: true})
				}
			}
		}
	}
	for start := 0; start < len(idxs); start += batch {
		part := idxs[start:min(start+batch, len(idxs))]
		sq := `SELECT idx, status, materialized FROM partition_status WHERE asset_id=? AND idx IN (?` + strings.Repeat(",?", len(part)-1) + `)`
		args := make([]any, 0, len(part)+1)
		args = append(args, assetID)
		for _, i := range part {
			args = append(args, i)
		}
		var rows []IdxStatus
		if err := q.SelectContext(ctx, &rows, sq, args...); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// StatusCountsInRange counts the stored statuses of asset assetID's
// partitions with index in [lo, hi] (a partition without a row is missing
// and not counted). Whole rollup blocks (RollupBlock indexes each) are read
// from partition_rollup, so the cost does not grow with the range; the
// partial blocks at its edges are counted from the status rows (index
// partition_status_staleness, which begins with (asset_id, idx)). At most
// three statements.
func (s *Store) StatusCountsInRange(ctx context.Context, assetID, lo, hi int64) (Counts, error) {
	out := Counts{}
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		return statusCountsInRange(ctx, q, out, assetID, lo, hi)
	})
	return out, err
}

// statusCountsInRange is StatusCountsInRange in c's snapshot: it adds to
// out. The partial blocks counted from the rows count the leased
// partitions in them in progress (the rollup counts them).
func statusCountsInRange(ctx context.Context, c *sqlx.Conn, out Counts, assetID, lo, hi int64) error {
	add := func(q string, args ...any) error {
		rows, err := c.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				return err
			}
			out[st] += n
		}
		return rows.Err()
	}
	const rowsQ = `SELECT status, COUNT(*) FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ? GROUP BY status`
	rowsIn := func(a, b int64) error {
		if err := add(rowsQ, assetID, a, b); err != nil {
			return err
		}
		ls, err := loadLeases(ctx, c, assetID, a, b)
		if err != nil {
			return err
		}
		if len(ls) > 0 {
			out[StatusInProgress] += int64(len(ls))
		}
		spans, err := rangeSpans(ctx, c, assetID, a, b)
		if n := spansLen(spans); n > 0 {
			out[StatusMaterialized] += n
		}
		return err
	}
	firstFull := (lo + RollupBlock - 1) >> RollupShift
	lastFull := (hi+1)>>RollupShift - 1
	if firstFull > lastFull {
		return rowsIn(lo, hi)
	}
	if err := add(`SELECT status, SUM(n) FROM partition_rollup WHERE asset_id=? AND block BETWEEN ? AND ? GROUP BY status`, assetID, firstFull, lastFull); err != nil {
		return err
	}
	if lo < firstFull<<RollupShift {
		if err := rowsIn(lo, firstFull<<RollupShift-1); err != nil {
			return err
		}
	}
	if hi >= (lastFull+1)<<RollupShift {
		if err := rowsIn((lastFull+1)<<RollupShift, hi); err != nil {
			return err
		}
	}
	return nil
}

// InProgressKeys lists the keys of asset assetID's partitions with index in
// [lo, hi] that some run is building now (status in_progress: the row is
// that run's lease), in index order, at most limit of them (limit <= 0: all).
func (s *Store) InProgressKeys(ctx context.Context, assetID, lo, hi int64, limit int) ([]string, error) {
	if limit <= 0 {
		limit = math.MaxInt32 // all (PostgreSQL refuses SQLite's LIMIT -1)
	}
	var out []string
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var rows []PartitionStatus
		if err := q.SelectContext(ctx, &rows, `SELECT partition_key, idx FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ? AND status='in_progress' ORDER BY idx LIMIT ?`,
			assetID, lo, hi, limit); err != nil {
			return err
		}
		ls, err := loadLeases(ctx, q, assetID, lo, hi)
		for _, r := range mergeLeaseRows(assetID, rows, ls) {
			if limit > 0 && len(out) == limit {
				break
			}
			out = append(out, r.Key)
		}
		return err
	})
	return out, err
}

// LeaseHolder is a partition in progress and the run that holds its lease.
type LeaseHolder struct {
	Key   string `db:"partition_key"`
	RunID string `db:"run_id"`
}

// LeaseHolders lists which run, other than exceptRun, holds the lease of
// each of asset assetID's partitions keys that is in progress, by key.
func (s *Store) LeaseHolders(ctx context.Context, assetID int64, keys []string, exceptRun string) ([]LeaseHolder, error) {
	q, args, err := sqlx.In(`SELECT partition_key, lease_run_id AS run_id FROM partition_status
		WHERE asset_id=? AND partition_key IN (?) AND status='in_progress' AND lease_run_id != ? ORDER BY partition_key`, assetID, keys, exceptRun)
	if err != nil {
		return nil, err
	}
	var out []LeaseHolder
	err = s.snapshot(ctx, func(c *sqlx.Conn) error {
		if err := c.SelectContext(ctx, &out, q, args...); err != nil {
			return err
		}
		ls, err := leasesByKey(ctx, c, assetID, keys)
		for _, l := range ls {
			if l.RunID != exceptRun {
				out = append(out, LeaseHolder{Key: l.Key, RunID: l.RunID})
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
		return err
	})
	return out, err
}

// LastAttemptStatus is the state of the last attempt at asset assetID's
// partition key, as its status row records it: "" when the partition has
// no row (never attempted) or the row records none.
//
// The row and the status ranges are read in one snapshot: a range turned
// into rows between two reads would be in neither.
func (s *Store) LastAttemptStatus(ctx context.Context, assetID int64, key string) (string, error) {
	var out string
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var prev *string
		err := q.GetContext(ctx, &prev, `SELECT last_attempt_status FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, key)
		if errors.Is(err, sql.ErrNoRows) {
			if s.betweenReads != nil {
				s.betweenReads()
			}
			rs, err := rangesByKey(ctx, q, assetID, []string{key})
			if _, ok := rs[key]; ok {
				out = StatusMaterialized
			}
			return err
		}
		if err != nil || prev == nil {
			return err
		}
		out = *prev
		return nil
	})
	return out, err
}

// SelectionRow is what a backfill selection filter needs of a stored status
// row.
type SelectionRow struct {
	Idx         int64   `db:"idx"`
	Status      string  `db:"status"`
	Mat         bool    `db:"materialized"`
	CodeVersion *string `db:"last_mat_code_version"`
	TaintedAt   *int64  `db:"tainted_at"`
}

// SelectionRows lists asset assetID's stored status rows with index in
// [lo, hi], in index order, with the columns a selection filter (missing,
// failed, tainted, stale, materialized) reads.
func (s *Store) SelectionRows(ctx context.Context, assetID, lo, hi int64) ([]SelectionRow, error) {
	var out []SelectionRow
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		if err := q.SelectContext(ctx, &out, `SELECT idx, status, materialized, last_mat_code_version, tainted_at FROM partition_status
			WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, assetID, lo, hi); err != nil {
			return err
		}
		ls, err := loadLeases(ctx, q, assetID, lo, hi)
		if err != nil {
			return err
		}
		// Partitions status ranges hold, materialized (their keys not
		// read).
		spans, err := rangeSpans(ctx, q, assetID, lo, hi)
		if err != nil {
			return err
		}
		held := make([]leasedPart, 0, spansLen(spans))
		for _, r := range spans {
			for i := r.Lo; i <= r.Hi; i++ {
				held = append(held, leasedPart{Idx: i, Code: r.Code, done: true})
			}
		}
		ls = mergeByIdx(ls, held)
		if len(ls) == 0 {
			return nil
		}
		standing := func(l leasedPart) SelectionRow {
			if l.done {
				code := l.Code
				return SelectionRow{Idx: l.Idx, Status: StatusMaterialized, Mat: true, CodeVersion: &code}
			}
			return SelectionRow{Idx: l.Idx, Status: StatusInProgress}
		}
		merged := make([]SelectionRow, 0, len(out)+len(ls))
		j := 0
		for _, r := range out {
			for ; j < len(ls) && ls[j].Idx < r.Idx; j++ {
				merged = append(merged, standing(ls[j]))
			}
			merged = append(merged, r)
		}
		for ; j < len(ls); j++ {
			merged = append(merged, standing(ls[j]))
		}
		out = merged
		return nil
	})
	return out, err
}

// AnyPartitionStatus reports whether any partition of any asset has a
// status row (was ever attempted): the demo seed writes history only into a
// database without.
func (s *Store) AnyPartitionStatus(ctx context.Context) (bool, error) {
	var n int
	err := s.r.GetContext(ctx, &n, `SELECT (SELECT COUNT(*) FROM partition_status) + (SELECT COUNT(*) FROM status_ranges)`)
	return n > 0, err
}
