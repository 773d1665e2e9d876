package db

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/jmoiron/sqlx"
)

// ThroughputPoint is the partitions a backfill finished in one time bucket
// starting at At (Unix ms).
type ThroughputPoint struct {
	At     int64 `db:"at"`
	Done   int64 `db:"done"`
	Failed int64 `db:"failed"`
}

// BackfillThroughput buckets a backfill's finished attempts by finish time
// into buckets of width ms starting at from: the partitions they
// materialized and failed per bucket, oldest first (partitions of a
// canceled or interrupted attempt are neither). Its cost is bounded by the
// backfill's attempts (one per chunk run attempt), never by partitions.
// Attempts recorded before their outcomes were counted count as a whole:
// built when they succeeded, failed when they failed.
func (s *Store) BackfillThroughput(ctx context.Context, backfillID string, from, width int64) ([]ThroughputPoint, error) {
	if width <= 0 {
		width = 1
	}
	return selectAll[ThroughputPoint](ctx, s.r, `SELECT ? + ((a.finished_at - ?) / ?) * ? AS at,
		SUM(COALESCE(a.materialized, CASE WHEN a.state = 'succeeded' THEN a.partitions ELSE 0 END)) AS done,
		SUM(COALESCE(a.failed, CASE WHEN a.state IN ('failed', 'timeout') THEN a.partitions ELSE 0 END)) AS failed
		FROM runs r JOIN attempts a ON a.run_id = r.id
		WHERE r.backfill_id = ? AND a.finished_at IS NOT NULL AND a.finished_at >= ?
		GROUP BY 1 ORDER BY 1`, from, from, width, width, backfillID, from)
}

// BackfillActiveRunStates is BackfillRunStates of the queued and running
// runs only: it reads the few active runs of every backfill (a partial
// index, whose condition the query repeats literally) instead of every run
// of this one, whose finished runs the backfill's counters already count.
func (s *Store) BackfillActiveRunStates(ctx context.Context, backfillID string) ([]RunStateCount, error) {
	return selectAll[RunStateCount](ctx, s.r, `SELECT state, COUNT(*) AS runs, COALESCE(SUM(`+greatest(s.dialect)+`(partitions - materialized - upstream_failed, 0)), 0) AS partitions
		FROM runs`+indexedBy(s.dialect, "runs_active")+` WHERE state IN ('queued', 'running') AND backfill_id = ? GROUP BY state ORDER BY state`, backfillID)
}

// RunStateCount is how many of a backfill's runs are in State, and how many
// of their partitions are still to build (a retry's partitions that earlier
// attempts built are counted as materialized on the backfill, not again).
type RunStateCount struct {
	State      string `db:"state"`
	Runs       int64  `db:"runs"`
	Partitions int64  `db:"partitions"`
}

// BackfillRetryWait counts a backfill's queued runs waiting out a retry's
// backoff at now, and returns when the first of them may start (Unix ms).
func (s *Store) BackfillRetryWait(ctx context.Context, backfillID string, now int64) (n int64, next int64, err error) {
	var row struct {
		N    int64  `db:"n"`
		Next *int64 `db:"next"`
	}
	err = s.r.GetContext(ctx, &row, `SELECT COUNT(*) AS n, MIN(not_before) AS next FROM runs`+indexedBy(s.dialect, "runs_active")+`
		WHERE state IN ('queued', 'running') AND state = 'queued' AND backfill_id = ? AND not_before > ?`, backfillID, now)
	if err != nil || row.Next == nil {
		return 0, 0, err
	}
	return row.N, *row.Next, nil
}

// BackfillRunStates counts a backfill's planned runs by state.
func (s *Store) BackfillRunStates(ctx context.Context, backfillID string) ([]RunStateCount, error) {
	return selectAll[RunStateCount](ctx, s.r, `SELECT state, COUNT(*) AS runs, COALESCE(SUM(`+greatest(s.dialect)+`(partitions - materialized - upstream_failed, 0)), 0) AS partitions
		FROM runs WHERE backfill_id = ? GROUP BY state ORDER BY state`, backfillID)
}

// ChunkBucket counts the runs of chunks [Bucket*size, (Bucket+1)*size) by state.
type ChunkBucket struct {
	Bucket int64  `db:"bucket"`
	State  string `db:"state"`
	Runs   int64  `db:"runs"`
	First  string `db:"first_id"`
}

// BackfillChunkBuckets counts a backfill's runs in buckets of size chunks
// (chunk numbers [lo, hi]) by state, with one run id per bucket and state.
func (s *Store) BackfillChunkBuckets(ctx context.Context, backfillID string, lo, hi, size int64) ([]ChunkBucket, error) {
	if size <= 0 {
		size = 1
	}
	return selectAll[ChunkBucket](ctx, s.r, `SELECT (chunk - ?) / ? AS bucket, state, COUNT(*) AS runs, MIN(id) AS first_id
		FROM runs WHERE backfill_id = ? AND chunk BETWEEN ? AND ? GROUP BY 1, 2 ORDER BY 1`, lo, size, backfillID, lo, hi)
}

// ChunkRuns returns the runs of chunks [lo, hi] of a backfill (at most hi-lo+1 rows).
func (s *Store) ChunkRuns(ctx context.Context, backfillID string, lo, hi int64) ([]Run, error) {
	return selectAll[Run](ctx, s.r, `SELECT * FROM runs WHERE backfill_id = ? AND chunk BETWEEN ? AND ? ORDER BY chunk`, backfillID, lo, hi)
}

// BackfillCountRuns counts a backfill's runs, optionally only in states.
func (s *Store) BackfillCountRuns(ctx context.Context, backfillID string, states []string) (int64, error) {
	q := `SELECT COUNT(*) FROM runs WHERE backfill_id = ?`
	args := []any{backfillID}
	for i, st := range states {
		if i == 0 {
			q += ` AND state IN (?`
		} else {
			q += `,?`
		}
		args = append(args, st)
	}
	if len(states) > 0 {
		q += `)`
	}
	var n int64
	err := s.r.GetContext(ctx, &n, q, args...)
	return n, err
}

// ChildBackfills lists the retry children of a backfill, oldest first.
func (s *Store) ChildBackfills(ctx context.Context, parentID string) ([]Backfill, error) {
	return selectAll[Backfill](ctx, s.r, `SELECT * FROM backfills WHERE parent_backfill_id = ? ORDER BY seq LIMIT 20`, parentID)
}

// BackfillSeq returns a backfill's seq (the list's cursor), or 0.
func (s *Store) BackfillSeq(ctx context.Context, id string) int64 {
	var n int64
	_ = s.r.GetContext(ctx, &n, `SELECT seq FROM backfills WHERE id = ?`, id)
	return n
}

// RunInstance is one partition instance of a run (one per attempt that
// built the partition): what that run did to the partition.
type RunInstance struct {
	ID     string  `db:"id"`
	RunID  string  `db:"run_id"`
	Key    string  `db:"partition_key"`
	Status string  `db:"status"`
	Error  *string `db:"error"`
}

// RunInstances returns the instances that runs built of keys (partitions of
// asset), oldest first, in one query read through the (asset, partition)
// index: its cost is bounded by len(keys) × attempts, never by the asset's
// history of other runs. Callers keep keys and runs to a page's worth (at
// most a few thousand together).
func (s *Store) RunInstances(ctx context.Context, assetID int64, runIDs, keys []string) ([]RunInstance, error) {
	if len(runIDs) == 0 || len(keys) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2*(1+len(keys)+len(runIDs)))
	for range 2 {
		args = append(args, assetID)
		for _, k := range keys {
			args = append(args, k)
		}
		for _, r := range runIDs {
			args = append(args, r)
		}
	}
	inKeys, inRuns := `(?`+strings.Repeat(",?", len(keys)-1)+`)`, `(?`+strings.Repeat(",?", len(runIDs)-1)+`)`
	var out []RunInstance
	err := s.snapshot(ctx, func(c *sqlx.Conn) error {
		var got []runInstanceAt
		if err := c.SelectContext(ctx, &got, `SELECT id, run_id, partition_key, status, error, created_at, COALESCE(finished_at, created_at) AS sort_at FROM (
			SELECT `+instanceCols+` FROM partition_instances WHERE asset_id = ? AND partition_key IN `+inKeys+` AND run_id IN `+inRuns+`
			UNION ALL `+inProgressInstances(`ps.asset_id = ? AND ps.partition_key IN `+inKeys+` AND ps.lease_run_id IN `+inRuns)+`) AS i
			ORDER BY created_at, COALESCE(finished_at, created_at), partition_key, id`, args...); err != nil {
			return err
		}
		// The instances in progress of partitions the runs lease without a
		// status row, and the materialized ones status ranges hold.
		ls, err := standingByKey(ctx, c, assetID, keys)
		if err != nil {
			return err
		}
		added := false
		for _, l := range ls {
			if slices.Contains(runIDs, l.RunID) {
				sortAt := l.Started
				if l.done {
					sortAt = l.finished
				}
				got = append(got, runInstanceAt{RunInstance{ID: l.InstanceID(), RunID: l.RunID, Key: l.Key, Status: l.status()}, l.Started, sortAt})
				added = true
			}
		}
		if added {
			// The query's order: created_at, COALESCE(finished_at,
			// created_at), partition_key, id.
			sort.SliceStable(got, func(a, b int) bool {
				x, y := got[a], got[b]
				if x.CreatedAt != y.CreatedAt {
					return x.CreatedAt < y.CreatedAt
				}
				if x.SortAt != y.SortAt {
					return x.SortAt < y.SortAt
				}
				if x.Key != y.Key {
					return x.Key < y.Key
				}
				return x.ID < y.ID
			})
		}
		out = make([]RunInstance, len(got))
		for i, g := range got {
			out[i] = g.RunInstance
		}
		return nil
	})
	return out, err
}

// runInstanceAt is a RunInstance with its place in time.
type runInstanceAt struct {
	RunInstance
	CreatedAt int64 `db:"created_at"`
	SortAt    int64 `db:"sort_at"`
}

// RunUpstreamFailed returns which of keys (partitions of asset) a backfill's
// run skipped because an upstream partition failed.
func (s *Store) RunUpstreamFailed(ctx context.Context, backfillID string, assetID int64, runID string, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	args := make([]any, 0, 3+len(keys))
	args = append(args, backfillID, assetID, runID)
	for _, k := range keys {
		args = append(args, k)
	}
	var got []string
	err := s.r.SelectContext(ctx, &got, `SELECT partition_key FROM backfill_failures WHERE backfill_id = ? AND asset_id = ? AND run_id = ?
		AND reason = 'upstream_failed' AND partition_key IN (?`+strings.Repeat(",?", len(keys)-1)+`)`, args...)
	for _, k := range got {
		out[k] = true
	}
	return out, err
}

// SegmentFailures lists the partitions of one asset that a backfill failed to
// build or skipped for a failed upstream (at most the segment's selection).
func (s *Store) SegmentFailures(ctx context.Context, backfillID string, assetID int64) ([]Failure, error) {
	return selectAll[Failure](ctx, s.r, `SELECT * FROM backfill_failures WHERE backfill_id = ? AND asset_id = ? ORDER BY idx`, backfillID, assetID)
}

// EngineTotals is the backfill engine's state over every backfill (for the
// metrics). Every map has all its keys, zero included.
type EngineTotals struct {
	Backfills  map[string]int64 // by state
	ActiveRuns map[string]int64 // queued, running
	Runs       map[string]int64 // finished runs by final state
	Partitions map[string]int64 // finished partitions by outcome
}

// EngineTotals reads the small backfills table and the partial index of
// active runs: cheap however many partitions there are.
func (s *Store) EngineTotals(ctx context.Context) (EngineTotals, error) {
	t := EngineTotals{Backfills: map[string]int64{}, ActiveRuns: map[string]int64{RunQueued: 0, RunRunning: 0}}
	for _, st := range BackfillStates {
		t.Backfills[st] = 0
	}
	countBy := func(into map[string]int64, q string) error {
		var rows []struct {
			State string `db:"state"`
			N     int64  `db:"n"`
		}
		if err := s.r.SelectContext(ctx, &rows, q); err != nil {
			return err
		}
		for _, r := range rows {
			into[r.State] = r.N
		}
		return nil
	}
	if err := countBy(t.Backfills, `SELECT state, COUNT(*) AS n FROM backfills GROUP BY state`); err != nil {
		return t, err
	}
	if err := countBy(t.ActiveRuns, `SELECT state, COUNT(*) AS n FROM runs WHERE state IN ('queued', 'running') GROUP BY state`); err != nil {
		return t, err
	}
	var succ, failed, canceled, mat, pfailed, pup int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(runs_succeeded), 0), COALESCE(SUM(runs_failed), 0), COALESCE(SUM(runs_canceled), 0),
		COALESCE(SUM(partitions_materialized), 0), COALESCE(SUM(partitions_failed), 0), COALESCE(SUM(partitions_upstream_failed), 0) FROM backfills`).
		Scan(&succ, &failed, &canceled, &mat, &pfailed, &pup); err != nil {
		return t, err
	}
	t.Runs = map[string]int64{RunSucceeded: succ, RunFailed: failed, RunCanceled: canceled}
	t.Partitions = map[string]int64{StatusMaterialized: mat, StatusFailed: pfailed, "upstream_failed": pup}
	return t, nil
}
