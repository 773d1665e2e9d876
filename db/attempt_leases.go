package db

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"math"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
)

// Leases per attempt. A partition that has no status row when an attempt
// starts (PartRef.Prev "") gets no row then: the attempt's row in attempts
// holds its lease on those partitions (lease, with asset_id, lease_lo and
// lease_hi), and the partition's status row is written once, with the
// attempt's result, when the attempt ends (applyFinished). A partition is
// either a status row or leased by a running attempt, never both: a report
// during the lease first writes the in-progress row the lease stands for
// and takes the partition out of the lease (takeLease), and a re-index does
// so for every lease of the asset (reindexLeases). The attempt's end knows
// its leased partitions from its event (Prev ""); one that has a row by
// then is updated as a leased row.
//
// Every reader of partition statuses sees a leased partition as the
// in-progress row it stands for, through the functions of this file: they
// load the leases of an asset's running attempts (loadLeases) in the same
// snapshot as the rows (Store.snapshot) and merge them in; the planner reads
// them once a step (Leases). The rollup counts a leased partition as in
// progress, as it did the row.

// leaseDoc is the lease column of a running attempt: the partitions it
// leases, as runs of consecutive indexes and their keys.
type leaseDoc struct {
	// Asset is the asset's key, from which the instance ids of the
	// attempt's partitions are derived (AttemptInstanceIDs).
	Asset string `json:"a,omitempty"`
	Code  string `json:"c"`
	// R holds lo, hi pairs: runs of consecutive indexes, in the order of K.
	R []int64  `json:"r"`
	K []string `json:"k"`
	// I: the instance ids of K, when the event carried them (events written
	// before they named their asset); "" where derived.
	I []string `json:"i,omitempty"`
}

// idxs expands R into one index per key of K.
func (d *leaseDoc) idxs() []int64 {
	out := make([]int64, 0, len(d.K))
	for j := 0; j+1 < len(d.R); j += 2 {
		for i := d.R[j]; i <= d.R[j+1]; i++ {
			out = append(out, i)
		}
	}
	return out
}

// setIdxs sets R from one index per key.
func (d *leaseDoc) setIdxs(idxs []int64) {
	d.R = d.R[:0]
	for _, i := range idxs {
		if n := len(d.R); n > 0 && d.R[n-1]+1 == i {
			d.R[n-1] = i
			continue
		}
		d.R = append(d.R, i, i)
	}
}

// bounds are the smallest and largest leased index.
func (d *leaseDoc) bounds() (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, i := range d.R {
		lo, hi = min(lo, i), max(hi, i)
	}
	return lo, hi
}

// encode returns the lease columns of d: nil when it leases nothing.
func (d *leaseDoc) encode() (lo, hi *int64, text *string, err error) {
	if len(d.K) == 0 {
		return nil, nil, nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, nil, nil, err
	}
	l, h := d.bounds()
	s := string(b)
	return &l, &h, &s, nil
}

// newLease is the lease of attempt a on its partitions without a status
// row (Prev ""), nil when there are none.
func newLease(a AttemptStart) *leaseDoc {
	n, explicit := 0, false
	for _, pr := range a.Parts {
		if pr.Prev == "" {
			n++
			explicit = explicit || pr.InstanceID != ""
		}
	}
	if n == 0 {
		return nil
	}
	// Sized once: a lease is written for every chunk a backfill starts.
	d := &leaseDoc{Asset: a.Asset, Code: a.CodeVersion, K: make([]string, 0, n)}
	idxs := make([]int64, 0, n)
	if explicit {
		d.I = make([]string, 0, n)
	}
	for _, pr := range a.Parts {
		if pr.Prev != "" {
			continue
		}
		d.K = append(d.K, pr.Key)
		idxs = append(idxs, pr.Idx)
		if explicit {
			d.I = append(d.I, pr.InstanceID)
		}
	}
	d.setIdxs(idxs)
	return d
}

// leasedPart is one partition leased by a running attempt: what its
// in-progress status row would say.
type leasedPart struct {
	Key     string
	Idx     int64
	RunID   string
	Attempt int64
	Code    string
	Started int64 // the attempt's start (the row's updated_at)
	id      string
	ids     func(string) string
	// done: the partition is held by a status range (status_ranges.go),
	// materialized by the attempt, which ended at finished; otherwise the
	// attempt is running and leases it.
	done     bool
	finished int64
}

// status is the status of the row the partition reads as.
func (l leasedPart) status() string {
	if l.done {
		return StatusMaterialized
	}
	return StatusInProgress
}

// InstanceID is the instance the attempt builds of the partition.
func (l leasedPart) InstanceID() string {
	if l.id != "" || l.ids == nil {
		return l.id
	}
	return l.ids(l.Key)
}

// row is the in-progress status row the lease stands for (as the engine
// wrote it at the attempt's start before leases were kept per attempt).
func (l leasedPart) row(assetID int64) PartitionStatus {
	id, run, code := l.InstanceID(), l.RunID, l.Code
	if l.done {
		// The row insertMaterialized writes for a partition its attempt
		// leased without a row and materialized plainly.
		at, st := l.finished, StatusMaterialized
		p := PartitionStatus{AssetID: assetID, Key: l.Key, Idx: l.Idx, Status: st, Materialized: true, LastMatInstanceID: &id, LastMatRunID: &run,
			LastMatAt: &at, LastMatCodeVersion: &code, LastAttemptAt: &at, LastAttemptStatus: &st, UpdatedAt: at}
		p.fill()
		return p
	}
	return PartitionStatus{AssetID: assetID, Key: l.Key, Idx: l.Idx, Status: StatusInProgress, UpdatedAt: l.Started,
		LeaseInstanceID: &id, LeaseRunID: &run, LeaseCodeVersion: &code}
}

// leaseRow is a running attempt's lease as stored.
type leaseRow struct {
	RunID   string `db:"run_id"`
	Attempt int64  `db:"attempt"`
	Started int64  `db:"started_at"`
	Lease   string `db:"lease"`
	Lo      int64  `db:"lease_lo"` // read by ReadLeases and leaseRowsIn
	Hi      int64  `db:"lease_hi"`
}

// parts decodes the lease into its partitions with index in [lo, hi].
func (r leaseRow) parts(lo, hi int64) ([]leasedPart, *leaseDoc, error) {
	var d leaseDoc
	if err := json.Unmarshal([]byte(r.Lease), &d); err != nil {
		return nil, nil, err
	}
	return r.partsOf(nil, &d, d.idxs(), lo, hi), &d, nil
}

// decodedLeases keeps leases decoded, by their text: every page and API
// read of an asset's partitions during a backfill merges the leases of its
// running attempts, and decoding them again for each read was a quarter of
// the CPU of 16 readers beside a backfill (bench mixed). A lease's text
// changes when a partition leaves it (takeLease): the changed text is
// another entry.
var decodedLeases, _ = lru.New[string, decodedLease](4096)

type decodedLease struct {
	doc  *leaseDoc // read only
	idxs []int64
}

// readParts is parts for readers, which do not change the lease: the
// decoded lease comes from decodedLeases. It appends to out.
func (r leaseRow) readParts(out []leasedPart, lo, hi int64) ([]leasedPart, error) {
	dl, err := r.decoded()
	if err != nil {
		return nil, err
	}
	return r.partsOf(out, dl.doc, dl.idxs, lo, hi), nil
}

// decoded is the lease decoded, from decodedLeases or added to it.
func (r leaseRow) decoded() (decodedLease, error) {
	if dl, ok := decodedLeases.Get(r.Lease); ok {
		return dl, nil
	}
	var d leaseDoc
	if err := json.Unmarshal([]byte(r.Lease), &d); err != nil {
		return decodedLease{}, err
	}
	dl := decodedLease{doc: &d, idxs: d.idxs()}
	decodedLeases.Add(r.Lease, dl)
	return dl, nil
}

// partsOf appends to out the partitions of lease d (its indexes idxs) with
// index in [lo, hi].
func (r leaseRow) partsOf(out []leasedPart, d *leaseDoc, idxs []int64, lo, hi int64) []leasedPart {
	var ids func(string) string
	if d.Asset != "" {
		ids = AttemptInstanceIDs(r.RunID, r.Attempt, d.Asset)
	}
	out = slices.Grow(out, len(idxs))
	for j, i := range idxs {
		if i < lo || i > hi || j >= len(d.K) {
			continue
		}
		l := leasedPart{Key: d.K[j], Idx: i, RunID: r.RunID, Attempt: r.Attempt, Code: d.Code, Started: r.Started, ids: ids}
		if j < len(d.I) {
			l.id = d.I[j]
		}
		out = append(out, l)
	}
	return out
}

// loadLeases returns the partitions of asset assetID with index in [lo, hi]
// that running attempts lease, in index order. The partial index
// attempts_running keeps it to the running attempts.
func loadLeases(ctx context.Context, q Querier, assetID, lo, hi int64) ([]leasedPart, error) {
	rows, err := leaseRowsIn(ctx, q, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	var out []leasedPart
	for _, r := range rows {
		if out, err = r.readParts(out, lo, hi); err != nil {
			return nil, err
		}
	}
	// Chunks are index ranges: leases taken in order of their lowest index
	// are most often in order already.
	byIdx := func(a, b leasedPart) int { return cmp.Compare(a.Idx, b.Idx) }
	if !slices.IsSortedFunc(out, byIdx) {
		slices.SortStableFunc(out, byIdx)
	}
	return out, nil
}

// firstLeases is loadLeases for a page of limit partitions: the first limit
// leased partitions in [lo, hi] by index (or fewer). The leases are read in
// order of their lowest index, and decoded only until no later one can hold
// a partition among the first limit: a page of the partitions list then
// costs its page, not every running attempt's (10,000 partitions at 100
// attempts of 100).
func firstLeases(ctx context.Context, q Querier, assetID, lo, hi int64, limit int) ([]leasedPart, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := leaseRowsIn(ctx, q, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	byIdx := func(a, b leasedPart) int { return cmp.Compare(a.Idx, b.Idx) }
	var out []leasedPart
	for k, r := range rows {
		var err error
		if out, err = r.readParts(out, lo, hi); err != nil {
			return nil, err
		}
		if len(out) < limit || k == len(rows)-1 {
			continue
		}
		slices.SortStableFunc(out, byIdx)
		out = out[:limit]
		if rows[k+1].Lo > out[limit-1].Idx {
			return out, nil // the next leases begin past the page
		}
	}
	slices.SortStableFunc(out, byIdx)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// leasedIdxs returns the indexes in [lo, hi] of asset assetID's partitions
// that running attempts lease, in order: loadLeases for a reader that needs
// only which partitions are leased (MissingAfter).
func leasedIdxs(ctx context.Context, q Querier, assetID, lo, hi int64) ([]int64, error) {
	rows, err := leaseRowsIn(ctx, q, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, r := range rows {
		dl, err := r.decoded()
		if err != nil {
			return nil, err
		}
		for _, i := range dl.idxs {
			if i >= lo && i <= hi {
				out = append(out, i)
			}
		}
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return out, nil
}

// leaseRowsIn reads the leases of asset assetID's running attempts that
// meet indexes [lo, hi], in order of their lowest index (Lo).
func leaseRowsIn(ctx context.Context, q Querier, assetID, lo, hi int64) ([]leaseRow, error) {
	var rows []leaseRow
	err := q.SelectContext(ctx, &rows, `SELECT run_id, attempt, started_at, lease, lease_lo FROM attempts
		WHERE state='running' AND asset_id=? AND lease IS NOT NULL AND lease_lo <= ? AND lease_hi >= ? ORDER BY lease_lo`, assetID, hi, lo)
	return rows, err
}

// allLeases is loadLeases over every index.
func allLeases(ctx context.Context, q Querier, assetID int64) ([]leasedPart, error) {
	return loadLeases(ctx, q, assetID, math.MinInt64, math.MaxInt64)
}

// leasesByKey returns the leased partitions among keys.
func leasesByKey(ctx context.Context, q Querier, assetID int64, keys []string) (map[string]leasedPart, error) {
	out := map[string]leasedPart{}
	if len(keys) == 0 {
		return out, nil
	}
	all, err := allLeases(ctx, q, assetID)
	if err != nil || len(all) == 0 {
		return out, err
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	for _, l := range all {
		if want[l.Key] {
			out[l.Key] = l
		}
	}
	return out, nil
}

// snapshot runs fn on one reader connection inside one read transaction
// (SQLite's BEGIN DEFERRED, which takes no write lock; PostgreSQL's
// REPEATABLE READ, one snapshot for every statement): the rows and the leases fn
// reads are of the same moment, so that no partition reads as neither
// leased nor written while an attempt ends.
func (s *Store) snapshot(ctx context.Context, fn func(q *sqlx.Conn) error) error {
	conn, err := s.r.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	begin := `BEGIN DEFERRED`
	if s.dialect == Postgres {
		begin = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return err
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); err != nil {
			// Not back to the pool with its transaction open (it would
			// hold its snapshot, and the WAL, forever): discarded.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return fn(conn)
}

// mergeLeaseRows merges the leased partitions ls (in index order) into the
// status rows rows (in index order) as in-progress rows.
func mergeLeaseRows(assetID int64, rows []PartitionStatus, ls []leasedPart) []PartitionStatus {
	return mergeFirstLeaseRows(assetID, rows, ls, math.MaxInt)
}

// mergeFirstLeaseRows is mergeLeaseRows of the first limit rows only: the
// rows past them are neither built nor kept.
func mergeFirstLeaseRows(assetID int64, rows []PartitionStatus, ls []leasedPart, limit int) []PartitionStatus {
	if len(ls) == 0 {
		return rows[:min(len(rows), limit)]
	}
	out := make([]PartitionStatus, 0, min(len(rows)+len(ls), limit))
	j := 0
	for _, r := range rows {
		for j < len(ls) && ls[j].Idx < r.Idx && len(out) < limit {
			out = append(out, ls[j].row(assetID))
			j++
		}
		if len(out) == limit {
			return out
		}
		out = append(out, r)
	}
	for ; j < len(ls) && len(out) < limit; j++ {
		out = append(out, ls[j].row(assetID))
	}
	return out
}

// takeLease turns the lease of a running attempt on asset assetID's
// partition key, if there is one, into the in-progress status row the
// lease stands for (the row the engine wrote at an attempt's start before
// leases were kept per attempt), and takes the partition out of the
// attempt's lease. A report during a lease then applies over that row as
// it always did (leasedStatus), and the attempt's end finds the row. The
// rollup already counts the partition in progress.
func takeLease(ctx context.Context, tx *sqlx.Tx, assetID int64, key string) error {
	return eachRunningLease(ctx, tx, assetID, func(r leaseRow, ps []leasedPart, d *leaseDoc) (bool, error) {
		j := slices.IndexFunc(ps, func(l leasedPart) bool { return l.Key == key })
		if j < 0 {
			return false, nil
		}
		if err := writeLeaseRow(ctx, tx, assetID, ps[j]); err != nil {
			return true, err
		}
		idxs := d.idxs()
		d.K = slices.Delete(d.K, j, j+1)
		if len(d.I) > j {
			d.I = slices.Delete(d.I, j, j+1)
		}
		d.setIdxs(slices.Delete(idxs, j, j+1))
		return true, writeLease(ctx, tx, r.RunID, r.Attempt, d)
	})
}

// eachRunningLease calls visit with each lease of asset assetID's running
// attempts: the attempt's row, its leased partitions and its lease
// document, until visit says it is done or fails.
func eachRunningLease(ctx context.Context, tx *sqlx.Tx, assetID int64, visit func(r leaseRow, ps []leasedPart, d *leaseDoc) (done bool, err error)) error {
	rows, err := selectAll[leaseRow](ctx, tx, `SELECT run_id, attempt, started_at, lease FROM attempts
		WHERE state='running' AND asset_id=? AND lease IS NOT NULL`, assetID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		ps, d, err := r.parts(math.MinInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		if done, err := visit(r, ps, d); done || err != nil {
			return err
		}
	}
	return nil
}

// writeLease stores d as the lease of an attempt.
func writeLease(ctx context.Context, tx *sqlx.Tx, runID string, attempt int64, d *leaseDoc) error {
	lo, hi, text, err := d.encode()
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE attempts SET lease_lo=?, lease_hi=?, lease=? WHERE run_id=? AND attempt=?`, lo, hi, text, runID, attempt)
	return err
}

// reindexLeases ends the leases of asset assetID's running attempts on
// partitions without a status row when the asset is re-indexed: each
// becomes the in-progress row it stands for (as takeLease writes it), at
// its index in the new key space sp (-1 for keys that left it), before
// reindexAsset rebuilds the rollup from the rows. The attempts' ends then
// find rows, which they update as any leased row.
func reindexLeases(ctx context.Context, tx *sqlx.Tx, assetID int64, sp catalog.Space) error {
	return eachRunningLease(ctx, tx, assetID, func(r leaseRow, ps []leasedPart, _ *leaseDoc) (bool, error) {
		for _, l := range ps {
			i, err := sp.Index(l.Key)
			if err != nil {
				i = -1
			}
			l.Idx = i
			if err := writeLeaseRow(ctx, tx, assetID, l); err != nil {
				return true, err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE attempts SET lease_lo=NULL, lease_hi=NULL, lease=NULL WHERE run_id=? AND attempt=?`, r.RunID, r.Attempt)
		return false, err
	})
}

// writeLeaseRow writes the in-progress status row lease l stands for (as
// the engine wrote it at an attempt's start before leases were kept per
// attempt).
func writeLeaseRow(ctx context.Context, tx *sqlx.Tx, assetID int64, l leasedPart) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, lease_instance_id, lease_run_id, lease_code_version, updated_at)
		VALUES (?,?,?,'in_progress',0,?,?,?,?) ON CONFLICT DO NOTHING`, assetID, l.Key, l.Idx, l.InstanceID(), l.RunID, l.Code, l.Started)
	return err
}

// leaseFacts adds to an asset's staleness facts b the partitions running
// attempts lease without a row, whose indexes are leased (in order), as the in-progress
// rows they stand for (never materialized); b is not changed. The leases
// are read before the rows (not in one snapshot: the rows are read in
// parallel ranges), so a partition whose lease ends meanwhile is in both
// (its row wins) rather than in neither; a cache entry patched later drops
// an ended lease with the keys of the event that ended it.
func leaseFacts(b *baseFacts, leased []int64) *baseFacts {
	var add []int64
	for _, i := range leased {
		if i < 0 {
			continue
		}
		if _, found := slices.BinarySearch(b.Idx, i); !found && (len(add) == 0 || add[len(add)-1] != i) {
			add = append(add, i)
		}
	}
	if len(add) == 0 {
		return b
	}
	n := len(b.Idx) + len(add)
	out := &baseFacts{Idx: make([]int64, 0, n), Status: make([]uint8, 0, n), Flags: make([]uint8, 0, n),
		MatAt: make([]int64, 0, n), Code: make([]string, 0, n)}
	j := 0
	lease := func() {
		out.Idx = append(out.Idx, add[j])
		out.Status = append(out.Status, stInProgress)
		out.Flags = append(out.Flags, 0)
		out.MatAt = append(out.MatAt, 0)
		out.Code = append(out.Code, "")
		j++
	}
	for k, i := range b.Idx {
		for j < len(add) && add[j] < i {
			lease()
		}
		out.Idx = append(out.Idx, i)
		out.Status = append(out.Status, b.Status[k])
		out.Flags = append(out.Flags, b.Flags[k])
		out.MatAt = append(out.MatAt, b.MatAt[k])
		out.Code = append(out.Code, b.Code[k])
	}
	for j < len(add) {
		lease()
	}
	return out
}
