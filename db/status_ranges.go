package db

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jmoiron/sqlx"
)

// Status per attempt as index ranges (migration 38). The partitions an
// engine attempt leased without a status row (PartRef.Prev "") and
// materialized plainly (no metadata, no error, instance ids derived from the
// attempt), in runs of consecutive indexes within a block of 1,024 whose
// keys increase, get no status row and no instance range: each run is one
// status_ranges row, which holds their keys. A chunk of 100 partitions is
// one or two rows instead of 100 status rows, their index entries and an
// instance range; a million-partition backfill writes 10,000 rows, not a
// million.
//
// What holds it together:
//   - A partition is a status row or in a status range, never both. A range
//     is written only over indexes without a row (insertStatusRanges), and
//     every write to a partition's status row turns the ranges holding it
//     into rows first (explodeStatusRanges*): an attempt's start on a
//     partition that has a status (Prev not ""), a report, a taint, a
//     re-index.
//   - The key intervals [first_key, last_key] of an asset's ranges do not
//     overlap (byte order), so the range that may hold a key is the first
//     whose last_key is not below it (rangeHolding).
//   - Every reader of partition statuses sees a partition in a range as the
//     status row it stands for (a materialized row: leasedPart with done),
//     merged in as leases are (attempt_leases.go), and every reader of
//     instances sees its instance (rangeInstances).
//
// When a range is turned into rows, its partitions get the rows the engine
// would have written (insertMaterialized) and their instances an
// instance_ranges row: nothing a reader sees changes.

// minStatusRange is the fewest partitions a status range holds: a single
// partition is a row.
const minStatusRange = 2

// statusRangeRow is a status_ranges row.
type statusRangeRow struct {
	AssetID  int64  `db:"asset_id"`
	Block    int64  `db:"block"`
	Lo       int64  `db:"lo"`
	Hi       int64  `db:"hi"`
	FirstKey string `db:"first_key"`
	LastKey  string `db:"last_key"`
	RunID    string `db:"run_id"`
	Attempt  int64  `db:"attempt"`
	AssetKey string `db:"asset_key"`
	Code     string `db:"code_version"`
	Started  int64  `db:"started_at"`
	Finished int64  `db:"finished_at"`
	Keys     string `db:"keys"`
}

// statusRangeCols are status_ranges' columns, in statusRangeRow's order.
const statusRangeCols = `asset_id, block, lo, hi, first_key, last_key, run_id, attempt, asset_key, code_version, started_at, finished_at, keys`

// decodedRanges keeps the keys of status ranges decoded: pages of a large
// asset read the same ranges again and again (2,048 ranges of 100 keys
// are a few MB), keyed by the keys' text.
var decodedRanges, _ = lru.New[string, []string](2048)

// keys decodes the range's keys (from decodedRanges when there).
func (r *statusRangeRow) keys() ([]string, error) {
	// By the text itself, as decodedLeases: ranges of two databases in one
	// process (tests, benchmarks) may share an asset id, index and run id.
	ck := r.Keys
	if ks, ok := decodedRanges.Get(ck); ok {
		return ks, nil
	}
	var ks []string
	if err := json.Unmarshal([]byte(r.Keys), &ks); err != nil {
		return nil, err
	}
	decodedRanges.Add(ck, ks)
	return ks, nil
}

// parts appends to out the range's partitions with index in [lo, hi], as
// the materialized rows they stand for.
func (r *statusRangeRow) parts(out []leasedPart, lo, hi int64) ([]leasedPart, error) {
	ks, err := r.keys()
	if err != nil {
		return nil, err
	}
	ids := AttemptInstanceIDs(r.RunID, r.Attempt, r.AssetKey)
	for i := max(lo, r.Lo); i <= min(hi, r.Hi); i++ {
		j := i - r.Lo
		if j >= int64(len(ks)) {
			break
		}
		out = append(out, leasedPart{Key: ks[j], Idx: i, RunID: r.RunID, Attempt: r.Attempt, Code: r.Code, Started: r.Started,
			ids: ids, done: true, finished: r.Finished})
	}
	return out, nil
}

// rangesIn reads asset assetID's status ranges that meet indexes [lo, hi],
// in index order; withKeys false leaves their keys out (readers that need
// only indexes).
func rangesIn(ctx context.Context, q Querier, assetID, lo, hi int64, withKeys bool) ([]statusRangeRow, error) {
	return rangesUpTo(ctx, q, assetID, lo, hi, withKeys, 0)
}

// rangesUpTo is rangesIn, the first limit ranges (limit <= 0: all).
func rangesUpTo(ctx context.Context, q Querier, assetID, lo, hi int64, withKeys bool, limit int) ([]statusRangeRow, error) {
	if hi < lo {
		return nil, nil
	}
	cols := statusRangeCols
	if !withKeys {
		cols = `asset_id, block, lo, hi, first_key, last_key, run_id, attempt, asset_key, code_version, started_at, finished_at, '' AS keys`
	}
	if limit <= 0 {
		limit = math.MaxInt32 // all (PostgreSQL refuses SQLite's LIMIT -1)
	}
	return selectAll[statusRangeRow](ctx, q, `SELECT `+cols+` FROM status_ranges
		WHERE asset_id=? AND block BETWEEN ? AND ? AND lo <= ? AND hi >= ? ORDER BY block, lo LIMIT ?`, assetID, blockOf(lo), blockOf(hi), hi, lo, limit)
}

// rangeSpans returns the index spans, within [lo, hi], of asset assetID's
// status ranges there, in order (their keys not read).
func rangeSpans(ctx context.Context, q Querier, assetID, lo, hi int64) ([]statusRangeRow, error) {
	rs, err := rangesIn(ctx, q, assetID, lo, hi, false)
	for i := range rs {
		rs[i].Lo, rs[i].Hi = max(rs[i].Lo, lo), min(rs[i].Hi, hi)
	}
	return rs, err
}

// spansLen is how many partitions spans hold.
func spansLen(spans []statusRangeRow) int64 {
	var n int64
	for _, r := range spans {
		n += r.Hi - r.Lo + 1
	}
	return n
}

// blockOf is the block of index i (a negative index: block -1, where no
// range is).
func blockOf(i int64) int64 {
	if i < 0 {
		return -1
	}
	return i >> rangeBlockShift
}

// loadRanges returns the partitions of asset assetID with index in [lo, hi]
// that status ranges hold, in index order, at most limit of them (limit <=
// 0: all).
func loadRanges(ctx context.Context, q Querier, assetID, lo, hi int64, limit int) ([]leasedPart, error) {
	rows, err := rangesUpTo(ctx, q, assetID, lo, hi, true, limit)
	if err != nil {
		return nil, err
	}
	var out []leasedPart
	for i := range rows {
		if out, err = rows[i].parts(out, lo, hi); err != nil {
			return nil, err
		}
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
	}
	return out, nil
}

// rangeHolding returns the status range of asset assetID that may hold key
// (its key interval holds it), or nil.
func rangeHolding(ctx context.Context, q Querier, assetID int64, key string) (*statusRangeRow, error) {
	rows, err := selectAll[statusRangeRow](ctx, q, `SELECT `+statusRangeCols+` FROM status_ranges
		WHERE asset_id=? AND last_key >= ? ORDER BY last_key LIMIT 1`, assetID, key)
	if err != nil || len(rows) == 0 || rows[0].FirstKey > key {
		return nil, err
	}
	return &rows[0], nil
}

// rangesByKey returns, by key, the partitions among keys that status ranges
// hold: one lookup per range met (keys are looked up in order, and the key
// intervals of ranges do not overlap).
func rangesByKey(ctx context.Context, q Querier, assetID int64, keys []string) (map[string]leasedPart, error) {
	out := map[string]leasedPart{}
	if len(keys) == 0 {
		return out, nil
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	var cur *statusRangeRow // the range looked up last
	var curKeys []string
	noneBelow := "" // no range holds a key below this one (after a miss)
	missed := false
	for _, k := range slices.Compact(sorted) {
		if cur != nil && k <= cur.LastKey {
			if j, ok := slices.BinarySearch(curKeys, k); ok {
				out[k] = partOfRange(cur, curKeys, j)
			}
			continue
		}
		if missed && k < noneBelow {
			continue
		}
		r, err := selectAll[statusRangeRow](ctx, q, `SELECT `+statusRangeCols+` FROM status_ranges
			WHERE asset_id=? AND last_key >= ? ORDER BY last_key LIMIT 1`, assetID, k)
		if err != nil {
			return nil, err
		}
		if len(r) == 0 {
			break // no range holds k or anything above it
		}
		if r[0].FirstKey > k {
			cur, missed, noneBelow = nil, true, r[0].FirstKey
			continue
		}
		cur, missed = &r[0], false
		if curKeys, err = cur.keys(); err != nil {
			return nil, err
		}
		if j, ok := slices.BinarySearch(curKeys, k); ok {
			out[k] = partOfRange(cur, curKeys, j)
		}
	}
	return out, nil
}

// partOfRange is the partition at position j of range r (keys ks).
func partOfRange(r *statusRangeRow, ks []string, j int) leasedPart {
	return leasedPart{Key: ks[j], Idx: r.Lo + int64(j), RunID: r.RunID, Attempt: r.Attempt, Code: r.Code, Started: r.Started,
		ids: AttemptInstanceIDs(r.RunID, r.Attempt, r.AssetKey), done: true, finished: r.Finished}
}

// mergeByIdx merges two lists of partitions, each in index order.
func mergeByIdx(a, b []leasedPart) []leasedPart {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]leasedPart, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].Idx <= b[j].Idx {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// loadStanding returns the partitions of asset assetID with index in [lo,
// hi] that have no status row but read as one: leased by a running attempt
// (in progress) or held by a status range (materialized), in index order.
func loadStanding(ctx context.Context, q Querier, assetID, lo, hi int64) ([]leasedPart, error) {
	ls, err := loadLeases(ctx, q, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	rs, err := loadRanges(ctx, q, assetID, lo, hi, 0)
	if err != nil {
		return nil, err
	}
	return mergeByIdx(ls, rs), nil
}

// standingByKey is loadStanding by key: the partitions among keys leased or
// held by a range.
func standingByKey(ctx context.Context, q Querier, assetID int64, keys []string) (map[string]leasedPart, error) {
	out, err := leasesByKey(ctx, q, assetID, keys)
	if err != nil {
		return nil, err
	}
	rs, err := rangesByKey(ctx, q, assetID, keys)
	if err != nil {
		return nil, err
	}
	for k, p := range rs {
		out[k] = p
	}
	return out, nil
}

// insertStatusRanges records as status ranges what it can of items
// (partitions of asset assetID, code version code, materialized plainly at
// at; each attempt's together): the fresh ones whose instance is derived,
// in runs of at least minStatusRange consecutive indexes of one attempt
// within a block, with increasing keys, over indexes without a status row,
// and whose key interval meets no other range's. It returns which of items
// it recorded (took[i]: items[i] is in a range); the others get status
// rows and instances.
func insertStatusRanges(ctx context.Context, tx *sqlx.Tx, assetID int64, code string, at int64, items []plainMat, roll rollupDelta) (took []bool, err error) {
	if !slices.ContainsFunc(items, func(it plainMat) bool { return it.fresh && it.ranged }) {
		return nil, nil
	}
	// An attempt's partitions in index order; items is the caller's own.
	sortEachAttempt(items, func(a, b plainMat) bool { return a.run == b.run && a.attempt == b.attempt }, plainByIdx)
	type run struct{ at, n int } // items[at : at+n]
	var runs []run
	for lo := 0; lo < len(items); {
		it := items[lo]
		if !it.fresh || !it.ranged {
			lo++
			continue
		}
		hi := lo + 1
		for hi < len(items) {
			n, p := items[hi], items[hi-1]
			if !n.fresh || !n.ranged || n.run != it.run || n.attempt != it.attempt || n.started != it.started || n.assetKey != it.assetKey ||
				n.part.Idx != p.part.Idx+1 || blockOf(n.part.Idx) != blockOf(it.part.Idx) || n.part.Key <= p.part.Key {
				break
			}
			hi++
		}
		if hi-lo >= minStatusRange {
			runs = append(runs, run{lo, hi - lo})
		}
		lo = hi
	}
	if len(runs) == 0 {
		return nil, nil
	}
	// The key intervals of the new ranges must not meet each other's.
	firstKey := func(r run) string { return items[r.at].part.Key }
	lastKey := func(r run) string { return items[r.at+r.n-1].part.Key }
	byFirst := slices.Clone(runs)
	slices.SortFunc(byFirst, func(a, b run) int { return cmp.Compare(firstKey(a), firstKey(b)) })
	clash := map[int]bool{} // by position in items
	for i := 1; i < len(byFirst); i++ {
		if firstKey(byFirst[i]) <= lastKey(byFirst[i-1]) {
			clash[byFirst[i].at], clash[byFirst[i-1].at] = true, true
		}
	}
	// No status row at these indexes (one appears when a report comes
	// while the lease holds), and no range whose keys meet these: one
	// statement for the step's runs, which answers the first index of
	// each that clashes.
	var checks []any
	for _, rn := range runs {
		if !clash[rn.at] {
			first, last := items[rn.at], items[rn.at+rn.n-1]
			checks = append(checks, first.part.Idx, last.part.Idx, first.part.Key, last.part.Key)
		}
	}
	if len(checks) == 0 {
		return nil, nil
	}
	taken := map[int64]bool{}
	for len(checks) > 0 {
		part := checks[:min(len(checks), 4*batchRows)]
		checks = checks[len(part):]
		row := `(?,?,?,?)`
		first := row
		if dialectOf(tx) == Postgres {
			first = pgTypedRow(row, part[:4])
		}
		var clashes []int64
		if err := tx.SelectContext(ctx, &clashes, `SELECT v.column1 FROM (VALUES `+first+strings.Repeat(","+row, len(part)/4-1)+`) AS v
			WHERE EXISTS (SELECT 1 FROM partition_status p WHERE p.asset_id = ? AND p.idx BETWEEN v.column1 AND v.column2)
			OR EXISTS (SELECT 1 FROM (SELECT s.first_key FROM status_ranges s WHERE s.asset_id = ? AND s.last_key >= v.column3 ORDER BY s.last_key LIMIT 1) AS r
				WHERE r.first_key <= v.column4)`, append(slices.Clip(part), assetID, assetID)...); err != nil {
			return nil, err
		}
		for _, lo := range clashes {
			taken[lo] = true
		}
	}
	took = make([]bool, len(items))
	args := make([]any, 0, 10*len(runs))
	for _, rn := range runs {
		first, last := items[rn.at], items[rn.at+rn.n-1]
		if clash[rn.at] || taken[first.part.Idx] {
			continue
		}
		ks := make([]string, rn.n)
		for i := range rn.n {
			it := items[rn.at+i]
			took[rn.at+i] = true
			ks[i] = it.part.Key
			roll.add(assetID, it.part.Idx, StatusInProgress, -1)
			roll.add(assetID, it.part.Idx, StatusMaterialized, 1)
		}
		b, err := json.Marshal(ks)
		if err != nil {
			return nil, err
		}
		args = append(args, blockOf(first.part.Idx), first.part.Idx, last.part.Idx, first.part.Key, last.part.Key, first.run, first.attempt,
			first.assetKey, first.started, string(b))
	}
	if len(args) == 0 {
		return nil, nil
	}
	return took, batchExec(ctx, tx, `INSERT INTO status_ranges (`+statusRangeCols+`)
		SELECT ?, column1, column2, column3, column4, column5, column6, column7, column8, ?, column9, ?, column10 FROM (VALUES `, []any{assetID, code, at},
		`(?,?,?,?,?,?,?,?,?,?)`, `) WHERE true`, 10, args)
}

// explodeStatusRanges turns asset assetID's status ranges that meet indexes
// [lo, hi] into status rows, before a write to one of those partitions.
func explodeStatusRanges(ctx context.Context, tx *sqlx.Tx, assetID, lo, hi int64) error {
	rows, err := rangesIn(ctx, tx, assetID, lo, hi, true)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := explodeRange(ctx, tx, &rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// explodeStatusRangesByKey turns the status ranges of asset assetID that
// hold any of keys into status rows, before a write to those partitions.
func explodeStatusRangesByKey(ctx context.Context, tx *sqlx.Tx, assetID int64, keys ...string) error {
	for _, k := range keys {
		r, err := rangeHolding(ctx, tx, assetID, k)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if err := explodeRange(ctx, tx, r); err != nil {
			return err
		}
	}
	return nil
}

// explodeAllStatusRanges turns every status range of asset assetID into
// status rows (before a re-index moves its partitions to other indexes).
func explodeAllStatusRanges(ctx context.Context, tx *sqlx.Tx, assetID int64) error {
	rows, err := selectAll[statusRangeRow](ctx, tx, `SELECT `+statusRangeCols+` FROM status_ranges WHERE asset_id=?`, assetID)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := explodeRange(ctx, tx, &rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// explodeRange writes the status rows range r stands for (as
// insertMaterialized would have) and its instance range, and deletes it.
// The rollup does not change: its partitions stay materialized.
func explodeRange(ctx context.Context, tx *sqlx.Tx, r *statusRangeRow) error {
	ks, err := r.keys()
	if err != nil {
		return err
	}
	ids := AttemptInstanceIDs(r.RunID, r.Attempt, r.AssetKey)
	args := make([]any, 0, 4*len(ks))
	for j, k := range ks {
		args = append(args, k, r.Lo+int64(j), ids(k), r.RunID)
	}
	if _, err := batchExecN(ctx, tx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
		last_mat_instance_id, last_mat_run_id, last_mat_at, last_mat_code_version, last_attempt_at, last_attempt_status, updated_at)
		SELECT ?, column1, column2, 'materialized', 1, column3, column4, ?, ?, ?, 'materialized', ? FROM (VALUES `, []any{r.AssetID, r.Finished, r.Code, r.Finished, r.Finished},
		`(?,?,?,?)`, `) WHERE true ON CONFLICT DO NOTHING`, 4, args); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO instance_ranges (asset_id, block, lo, hi, run_id, attempt, asset_key, code_version, started_at, finished_at)
		VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`, r.AssetID, r.Block, r.Lo, r.Hi, r.RunID, r.Attempt, r.AssetKey, r.Code, r.Started, r.Finished); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM status_ranges WHERE asset_id=? AND block=? AND lo=?`, r.AssetID, r.Block, r.Lo)
	return err
}

// rangedCount counts the items insertStatusRanges took.
func rangedCount(took []bool) int {
	n := 0
	for _, t := range took {
		if t {
			n++
		}
	}
	return n
}

// plainByIdx orders plainly materialized partitions by index.
func plainByIdx(a, b plainMat) int { return cmp.Compare(a.part.Idx, b.part.Idx) }
