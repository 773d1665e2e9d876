package db

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Backfill states.
const (
	BackfillPending   = "PENDING"
	BackfillRunning   = "RUNNING"
	BackfillPaused    = "PAUSED"
	BackfillCanceling = "CANCELING"
	BackfillCanceled  = "CANCELED"
	BackfillSucceeded = "SUCCEEDED"
	BackfillFailed    = "FAILED"
)

// BackfillStates lists every backfill state.
var BackfillStates = []string{BackfillPending, BackfillRunning, BackfillPaused, BackfillCanceling, BackfillCanceled, BackfillSucceeded, BackfillFailed}

// ActiveBackfillStates are the states of a backfill not finished yet.
var ActiveBackfillStates = []string{BackfillPending, BackfillRunning, BackfillPaused, BackfillCanceling}

// BackfillTerminal reports whether a backfill state is final.
func BackfillTerminal(state string) bool {
	return state == BackfillCanceled || state == BackfillSucceeded || state == BackfillFailed
}

// Backfill is one backfill's projection row.
type Backfill struct {
	ID                       string  `db:"id" json:"id"`
	Seq                      int64   `db:"seq" json:"seq"`
	Title                    string  `db:"title" json:"title"`
	State                    string  `db:"state" json:"state"`
	StateVersion             int64   `db:"state_version" json:"state_version"`
	Assets                   string  `db:"assets" json:"assets"`
	Selector                 string  `db:"selector" json:"selector"`
	ChunkSize                int64   `db:"chunk_size" json:"chunk_size"`
	MaxConcurrentRuns        int64   `db:"max_concurrent_runs" json:"max_concurrent_runs"`
	Priority                 int64   `db:"priority" json:"priority"`
	TotalPartitions          int64   `db:"total_partitions" json:"total_partitions"`
	TotalChunks              int64   `db:"total_chunks" json:"total_chunks"`
	NextChunk                int64   `db:"next_chunk" json:"next_chunk"`
	RunsActive               int64   `db:"runs_active" json:"runs_active"`
	RunsRunning              int64   `db:"runs_running" json:"runs_running"`
	RunsSucceeded            int64   `db:"runs_succeeded" json:"runs_succeeded"`
	RunsFailed               int64   `db:"runs_failed" json:"runs_failed"`
	RunsCanceled             int64   `db:"runs_canceled" json:"runs_canceled"`
	PartitionsMaterialized   int64   `db:"partitions_materialized" json:"partitions_materialized"`
	PartitionsFailed         int64   `db:"partitions_failed" json:"partitions_failed"`
	PartitionsUpstreamFailed int64   `db:"partitions_upstream_failed" json:"partitions_upstream_failed"`
	Terminate                bool    `db:"terminate" json:"terminate"`
	ParentBackfillID         *string `db:"parent_backfill_id" json:"parent_backfill_id"`
	RetryRequestID           *string `db:"retry_request_id" json:"retry_request_id"`
	RequestKey               *string `db:"request_key" json:"request_key"`
	RequestHash              string  `db:"request_hash" json:"request_hash"`
	CreatedBy                string  `db:"created_by" json:"created_by"`
	CreatedAt                int64   `db:"created_at" json:"created_at"`
	UpdatedAt                int64   `db:"updated_at" json:"updated_at"`
	StartedAt                *int64  `db:"started_at" json:"started_at"`
	FinishedAt               *int64  `db:"finished_at" json:"finished_at"`
}

// Segment is the part of a backfill that covers one asset.
type Segment struct {
	BackfillID string `db:"backfill_id" json:"backfill_id"`
	Pos        int64  `db:"pos" json:"pos"`
	Asset      string `db:"asset" json:"asset"`
	AssetID    int64  `db:"asset_id" json:"asset_id"`
	Partitions int64  `db:"partitions" json:"partitions"`
	FirstChunk int64  `db:"first_chunk" json:"first_chunk"`
	Chunks     int64  `db:"chunks" json:"chunks"`
	Explicit   bool   `db:"explicit" json:"explicit"`
	// ChunkSize is this asset's chunk size when the request set one of its
	// own (chunk_sizes); 0 = the backfill's.
	ChunkSize int64 `db:"chunk_size" json:"chunk_size,omitempty"`
}

// Size is the segment's chunk size in a backfill of chunks of
// backfillChunk partitions.
func (s Segment) Size(backfillChunk int64) int64 {
	if s.ChunkSize > 0 {
		return s.ChunkSize
	}
	return backfillChunk
}

// SelRange is a run of consecutive partition indexes [Lo, Hi] of a segment;
// Start is the selection position of Lo.
type SelRange struct {
	Start int64 `db:"start" json:"s"`
	Lo    int64 `db:"lo" json:"lo"`
	Hi    int64 `db:"hi" json:"hi"`
}

// Run is a chunk run's projection row.
type Run struct {
	ID             string  `db:"id" json:"id"`
	RunKey         string  `db:"run_key" json:"run_key"`
	BackfillID     string  `db:"backfill_id" json:"backfill_id"`
	Chunk          int64   `db:"chunk" json:"chunk"`
	Seg            int64   `db:"seg" json:"seg"`
	Asset          string  `db:"asset" json:"asset"`
	AssetID        int64   `db:"asset_id" json:"asset_id"`
	Fingerprint    string  `db:"fingerprint" json:"fingerprint"`
	Partitions     int64   `db:"partitions" json:"partitions"`
	FirstKey       string  `db:"first_key" json:"first_key"`
	LastKey        string  `db:"last_key" json:"last_key"`
	State          string  `db:"state" json:"state"`
	Attempts       int64   `db:"attempts" json:"attempts"`
	MaxAttempts    int64   `db:"max_attempts" json:"max_attempts"`
	NotBefore      *int64  `db:"not_before" json:"not_before"`
	Materialized   int64   `db:"materialized" json:"materialized"`
	Failed         int64   `db:"failed" json:"failed"`
	UpstreamFailed int64   `db:"upstream_failed" json:"upstream_failed"`
	Error          *string `db:"error" json:"error"`
	CreatedAt      int64   `db:"created_at" json:"created_at"`
	UpdatedAt      int64   `db:"updated_at" json:"updated_at"`
	StartedAt      *int64  `db:"started_at" json:"started_at"`
	FinishedAt     *int64  `db:"finished_at" json:"finished_at"`
}

// Run states.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCanceled  = "canceled"
)

// Attempt is one attempt of a run.
type Attempt struct {
	RunID      string  `db:"run_id" json:"run_id"`
	Attempt    int64   `db:"attempt" json:"attempt"`
	State      string  `db:"state" json:"state"`
	Owner      string  `db:"owner" json:"owner"`
	Partitions int64   `db:"partitions" json:"partitions"`
	StartedAt  int64   `db:"started_at" json:"started_at"`
	FinishedAt *int64  `db:"finished_at" json:"finished_at"`
	Error      *string `db:"error" json:"error"`
	// Materialized and Failed count the partitions the attempt built and
	// failed, once it ended (nil while it runs, and for attempts recorded
	// before they were counted).
	Materialized *int64 `db:"materialized" json:"materialized,omitempty"`
	Failed       *int64 `db:"failed" json:"failed,omitempty"`
}

// attemptCols are the columns of attempts that Attempt holds (not the
// lease of a running attempt: see attempt_leases.go).
const attemptCols = `run_id, attempt, state, owner, partitions, started_at, finished_at, error, materialized, failed`

// Attempt states.
const (
	AttemptRunning     = "running"
	AttemptSucceeded   = "succeeded"
	AttemptFailed      = "failed"
	AttemptTimeout     = "timeout"
	AttemptCanceled    = "canceled"
	AttemptInterrupted = "interrupted"
)

// Backfill returns one backfill, or ErrNotFound.
func (s *Store) Backfill(ctx context.Context, id string) (Backfill, error) {
	return getBackfill(ctx, s.r, id)
}

type getter = Querier

func getBackfill(ctx context.Context, q getter, id string) (Backfill, error) {
	return getOne[Backfill](ctx, q, "backfill", id, `SELECT * FROM backfills WHERE id=?`, id)
}

// BackfillTx reads a backfill inside a write transaction.
func BackfillTx(ctx context.Context, tx *sqlx.Tx, id string) (Backfill, error) {
	return getBackfill(ctx, tx, id)
}

// BackfillByRequestKey finds the backfill created with an idempotency key.
func (s *Store) BackfillByRequestKey(ctx context.Context, key string) (Backfill, error) {
	return backfillByRequestKey(ctx, s.r, key)
}

// BackfillByRequestKeyTx is BackfillByRequestKey in tx.
func BackfillByRequestKeyTx(ctx context.Context, tx *sqlx.Tx, key string) (Backfill, error) {
	return backfillByRequestKey(ctx, tx, key)
}

// BackfillIDsByRequestKeys returns the id of the backfill created under
// each of keys that has one (request key → backfill id), 500 keys a query.
func (s *Store) BackfillIDsByRequestKeys(ctx context.Context, keys []string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	for lo := 0; lo < len(keys); lo += 500 {
		rows, err := selectIn[struct {
			Key string `db:"request_key"`
			ID  string `db:"id"`
		}](ctx, s.r, `SELECT request_key, id FROM backfills WHERE request_key IN (?)`, keys[lo:min(lo+500, len(keys))])
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Key] = r.ID
		}
	}
	return out, nil
}

func backfillByRequestKey(ctx context.Context, q getter, key string) (Backfill, error) {
	return getRow[Backfill](ctx, q, ErrNotFound, `SELECT * FROM backfills WHERE request_key=?`, key)
}

// BackfillByRetry finds the child created by a retry request.
func (s *Store) BackfillByRetry(ctx context.Context, parent, requestID string) (Backfill, error) {
	return getRow[Backfill](ctx, s.r, ErrNotFound, `SELECT * FROM backfills WHERE parent_backfill_id=? AND retry_request_id=?`, parent, requestID)
}

// Backfills lists backfills newest first, with seq < before (0: from the
// newest), optionally only in the given states and only those selecting asset.
func (s *Store) Backfills(ctx context.Context, states []string, asset string, before int64, limit int) ([]Backfill, error) {
	q := `SELECT * FROM backfills WHERE 1=1`
	var args []any
	if asset != "" {
		q += ` AND id IN (SELECT backfill_id FROM backfill_segments WHERE asset = ?)`
		args = append(args, asset)
	}
	if before > 0 {
		q += ` AND seq < ?`
		args = append(args, before)
	}
	q, args = andIn(q, args, "state", states)
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	return selectAll[Backfill](ctx, s.r, q, args...)
}

// ActiveBackfills lists the backfills that are not terminal, in seq order.
func ActiveBackfills(ctx context.Context, q getter) ([]Backfill, error) {
	return scanBackfills(ctx, q, `SELECT `+backfillColumns+` FROM backfills WHERE state IN ('PENDING','RUNNING','PAUSED','CANCELING') ORDER BY seq`)
}

// Segments returns a backfill's segments in order.
func Segments(ctx context.Context, q getter, backfillID string) ([]Segment, error) {
	return selectAll[Segment](ctx, q, `SELECT * FROM backfill_segments WHERE backfill_id=? ORDER BY pos`, backfillID)
}

// SegmentRanges returns the ranges of a segment that overlap selection
// positions [p0, p1).
func SegmentRanges(ctx context.Context, q getter, backfillID string, pos, p0, p1 int64) ([]SelRange, error) {
	return selectAll[SelRange](ctx, q, `SELECT start, lo, hi FROM backfill_ranges WHERE backfill_id=? AND pos=?
		AND start >= (SELECT COALESCE(MAX(start), 0) FROM backfill_ranges WHERE backfill_id=? AND pos=? AND start <= ?)
		AND start < ? ORDER BY start`, backfillID, pos, backfillID, pos, p0, p1)
}

// AllSegmentRanges returns every range of a segment.
func AllSegmentRanges(ctx context.Context, q getter, backfillID string, pos int64) ([]SelRange, error) {
	return selectAll[SelRange](ctx, q, `SELECT start, lo, hi FROM backfill_ranges WHERE backfill_id=? AND pos=? ORDER BY start`, backfillID, pos)
}

// Failure is a partition a backfill failed to build or skipped.
type Failure struct {
	BackfillID string `db:"backfill_id" json:"backfill_id"`
	AssetID    int64  `db:"asset_id" json:"asset_id"`
	Key        string `db:"partition_key" json:"partition"`
	Idx        int64  `db:"idx" json:"idx"`
	Reason     string `db:"reason" json:"reason"`
	RunID      string `db:"run_id" json:"run_id"`
}

// Failures lists a backfill's failed and upstream-failed partitions.
func (s *Store) Failures(ctx context.Context, backfillID string) ([]Failure, error) {
	return selectAll[Failure](ctx, s.r, `SELECT * FROM backfill_failures WHERE backfill_id=? ORDER BY asset_id, idx`, backfillID)
}

// UpstreamFailedIn reports whether backfill b recorded a failure of asset in
// indexes [lo, hi].
func UpstreamFailedIn(ctx context.Context, q getter, backfillID string, assetID, lo, hi int64) (bool, error) {
	var n int
	err := q.GetContext(ctx, &n, `SELECT COUNT(*) FROM (SELECT 1 FROM backfill_failures WHERE backfill_id=? AND asset_id=? AND idx BETWEEN ? AND ? LIMIT 1) AS f`, backfillID, assetID, lo, hi)
	return n > 0, err
}

// FirstFailureIn returns the failure backfill backfillID recorded for asset
// assetID with the lowest index in [lo, hi] (index backfill_failures_by_idx);
// ok is false when it recorded none there. Only Key and Reason are read.
func (s *Store) FirstFailureIn(ctx context.Context, backfillID string, assetID, lo, hi int64) (f Failure, ok bool, err error) {
	var out []Failure
	if err := s.r.SelectContext(ctx, &out, `SELECT partition_key, reason FROM backfill_failures
		WHERE backfill_id=? AND asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx LIMIT 1`, backfillID, assetID, lo, hi); err != nil || len(out) == 0 {
		return f, false, err
	}
	return out[0], true, nil
}

// Runs lists a backfill's runs by chunk number, after chunk `after`.
func (s *Store) Runs(ctx context.Context, backfillID string, states []string, after int64, limit int) ([]Run, error) {
	q := `SELECT * FROM runs WHERE backfill_id=? AND chunk > ?`
	args := []any{backfillID, after}
	q, args = andIn(q, args, "state", states)
	q += ` ORDER BY chunk LIMIT ?`
	args = append(args, limit)
	return selectAll[Run](ctx, s.r, q, args...)
}

// Run returns one run, or ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (Run, error) {
	return getRun(ctx, s.r, id)
}

// RunTx reads a run inside a write transaction.
func RunTx(ctx context.Context, tx *sqlx.Tx, id string) (Run, error) { return getRun(ctx, tx, id) }

func getRun(ctx context.Context, q getter, id string) (Run, error) {
	return getOne[Run](ctx, q, "run", id, `SELECT * FROM runs WHERE id=?`, id)
}

// QueuedRuns lists every queued run of the active backfills.
func QueuedRuns(ctx context.Context, q getter) ([]Run, error) {
	return selectAll[Run](ctx, q, `SELECT * FROM runs WHERE state IN ('queued', 'running') AND state='queued' ORDER BY backfill_id, chunk`)
}

// Attempts lists a run's attempts.
func (s *Store) Attempts(ctx context.Context, runID string) ([]Attempt, error) {
	return selectAll[Attempt](ctx, s.r, `SELECT `+attemptCols+` FROM attempts WHERE run_id=? ORDER BY attempt`, runID)
}

// InterruptedAttempts counts the interrupted attempts of each of runIDs
// (runs with none have no entry).
func (s *Store) InterruptedAttempts(ctx context.Context, runIDs []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := selectIn[struct {
		RunID string `db:"run_id"`
		N     int64  `db:"n"`
	}](ctx, s.r, `SELECT run_id, COUNT(*) AS n FROM attempts WHERE state='interrupted' AND run_id IN (?) GROUP BY run_id`, runIDs)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.RunID] = r.N
	}
	return out, nil
}

// RunningAttempts lists every attempt in state running.
func RunningAttempts(ctx context.Context, q getter) ([]Attempt, error) {
	return selectAll[Attempt](ctx, q, `SELECT `+attemptCols+` FROM attempts WHERE state='running' ORDER BY run_id`)
}

// AttemptLog returns the stored log of an attempt ("" when none).
func (s *Store) AttemptLog(ctx context.Context, runID string, attempt int64) (string, error) {
	var l string
	err := s.r.GetContext(ctx, &l, `SELECT log FROM attempt_logs WHERE run_id=? AND attempt=?`, runID, attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return l, err
}

// Conflict is a run key requested again with a different fingerprint.
type Conflict struct {
	ID                   int64  `db:"id" json:"id"`
	RunKey               string `db:"run_key" json:"run_key"`
	BackfillID           string `db:"backfill_id" json:"backfill_id"`
	ExistingFingerprint  string `db:"existing_fingerprint" json:"existing_fingerprint"`
	RequestedFingerprint string `db:"requested_fingerprint" json:"requested_fingerprint"`
	At                   int64  `db:"at" json:"at"`
}

// Conflicts lists recorded conflicts, newest first.
func (s *Store) Conflicts(ctx context.Context, limit int) ([]Conflict, error) {
	return selectAll[Conflict](ctx, s.r, `SELECT * FROM conflicts ORDER BY id DESC LIMIT ?`, limit)
}

// RecentRunMillis describes an asset's up to 200 latest succeeded attempts:
// their mean duration per partition and per run (ms), their mean size
// (partitions), and how many there were.
func (s *Store) RecentRunMillis(ctx context.Context, assetID int64) (perPartition, perRun, size float64, n int, err error) {
	var row struct {
		Ms    sql.NullFloat64 `db:"ms"`
		RunMs sql.NullFloat64 `db:"run_ms"`
		Size  sql.NullFloat64 `db:"size"`
		N     int             `db:"n"`
	}
	mx := greatest(s.dialect)
	err = s.r.GetContext(ctx, &row, `SELECT AVG(CAST(finished_at - started_at AS DOUBLE PRECISION) / `+mx+`(partitions, 1)) AS ms,
		AVG(CAST(finished_at - started_at AS DOUBLE PRECISION)) AS run_ms, AVG(`+mx+`(partitions, 1)) AS size, COUNT(*) AS n FROM (
		SELECT a.finished_at, a.started_at, a.partitions FROM attempts a JOIN runs r ON r.id = a.run_id
		WHERE r.asset_id = ? AND a.state = 'succeeded' ORDER BY a.finished_at DESC LIMIT 200) AS a`, assetID)
	return row.Ms.Float64, row.RunMs.Float64, row.Size.Float64, row.N, err
}

// ReportedMillis is the mean time per partition of up to 200 materialized
// instances of an asset whose report gave a start before the end (a report
// without started_at has none), taken from its latest partitions, and how
// many there were.
func (s *Store) ReportedMillis(ctx context.Context, assetID int64) (perPartition float64, n int, err error) {
	type took struct {
		Key string `db:"partition_key"`
		Ms  int64  `db:"ms"`
	}
	// The latest 200 of each kind of instance (rows, ranges, status
	// ranges), then of all: over the view partition_instances the ranges'
	// partitions would be sorted all (0.7 s at a million), each kind alone
	// is read in key order.
	got, err := selectAll[took](ctx, s.r, `SELECT partition_key, finished_at - started_at AS ms FROM (
		SELECT * FROM (SELECT started_at, finished_at, partition_key FROM instance_rows
			WHERE asset_id = ? AND status = 'materialized' AND finished_at > started_at ORDER BY partition_key DESC LIMIT 200) AS r
		UNION ALL
		SELECT * FROM (SELECT started_at, finished_at, partition_key FROM instance_ranges_expanded
			WHERE asset_id = ? AND status = 'materialized' AND finished_at > started_at ORDER BY partition_key DESC LIMIT 200) AS g) AS x`, assetID, assetID)
	if err != nil {
		return 0, 0, err
	}
	rs, err := selectAll[statusRangeRow](ctx, s.r, `SELECT `+statusRangeCols+` FROM status_ranges
		WHERE asset_id = ? AND finished_at > started_at ORDER BY last_key DESC LIMIT 200`, assetID)
	if err != nil {
		return 0, 0, err
	}
	for i := range rs {
		ks, err := rs[i].keys()
		if err != nil {
			return 0, 0, err
		}
		for _, k := range ks {
			got = append(got, took{k, rs[i].Finished - rs[i].Started})
		}
	}
	slices.SortFunc(got, func(a, b took) int { return strings.Compare(b.Key, a.Key) })
	got = got[:min(len(got), 200)]
	if len(got) == 0 {
		return 0, 0, nil
	}
	var sum float64
	for _, g := range got {
		sum += float64(g.Ms)
	}
	return sum / float64(len(got)), len(got), nil
}

// UnfinishedBackfillsOf maps each asset that unfinished backfills select to
// those backfills' ids (oldest first), with the asset's stored scheme
// signature (the key space those backfills' chunks are positions in).
func (s *Store) UnfinishedBackfillsOf(ctx context.Context) (map[string][]string, map[string]string, error) {
	var rows []struct {
		Asset string `db:"asset"`
		ID    string `db:"backfill_id"`
		Sig   string `db:"scheme_signature"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT s.asset, s.backfill_id, COALESCE(a.scheme_signature, '') AS scheme_signature
		FROM backfills b JOIN backfill_segments s ON s.backfill_id = b.id LEFT JOIN assets a ON a.key = s.asset
		WHERE b.state IN ('PENDING','RUNNING','PAUSED','CANCELING') ORDER BY b.seq`); err != nil {
		return nil, nil, err
	}
	ids, sigs := map[string][]string{}, map[string]string{}
	for _, r := range rows {
		ids[r.Asset] = append(ids[r.Asset], r.ID)
		sigs[r.Asset] = r.Sig
	}
	return ids, sigs, nil
}

// andIn adds " AND col IN (?,…)" for values to the query q and values to its
// args; with no values it adds nothing (every value).
func andIn(q string, args []any, col string, values []string) (string, []any) {
	if len(values) == 0 {
		return q, args
	}
	q += ` AND ` + col + ` IN (?` + strings.Repeat(",?", len(values)-1) + `)`
	for _, v := range values {
		args = append(args, v)
	}
	return q, args
}
