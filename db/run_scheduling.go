package db

import (
	"context"
	"database/sql"
	"errors"
)

// The controller's questions about runs while it plans (jobs.Engine.plan,
// newRun, upstreamPending), and the run-wait explanation's (jobs.RunWait),
// which must answer as the controller would. The q variants run inside the
// controller's step transaction or on the reader.

// DueQueuedRuns lists the queued runs, of every backfill, whose retry
// backoff has passed at now (Unix ms; no not_before: due at once), by chunk.
// The redundant "state IN ('queued', 'running')" is the WHERE of the partial
// index runs_active (0003_backfills.sql): SQLite uses a partial index only
// when the query implies its condition, and with it this scan reads the few
// active runs instead of every run ever planned, in each controller step.
func DueQueuedRuns(ctx context.Context, q getter, now int64) ([]Run, error) {
	return selectAll[Run](ctx, q, `SELECT * FROM runs WHERE state IN ('queued', 'running') AND state='queued' AND COALESCE(not_before, 0) <= ? ORDER BY chunk`, now)
}

// UnfinishedRunsIn reports whether backfill backfillID has a run of a chunk
// in [lo, hi] still queued or running: a downstream chunk reading those
// chunks' partitions waits for them. (The unique index on (backfill_id,
// chunk) serves the range.)
func UnfinishedRunsIn(ctx context.Context, q getter, backfillID string, lo, hi int64) (bool, error) {
	var n int
	err := q.GetContext(ctx, &n, `SELECT COUNT(*) FROM runs WHERE backfill_id=? AND chunk BETWEEN ? AND ? AND state IN ('queued','running')`, backfillID, lo, hi)
	return n > 0, err
}

// RunFingerprintsFrom returns, by run key, the fingerprints of backfill
// backfillID's runs of chunk from and after (none, unless an earlier
// version planned past the backfill's next chunk): planning a key again
// with other partitions is a conflict.
func RunFingerprintsFrom(ctx context.Context, q Querier, backfillID string, from int64) (map[string]string, error) {
	rows, err := selectAll[struct {
		Key string `db:"run_key"`
		FP  string `db:"fingerprint"`
	}](ctx, q, `SELECT run_key, fingerprint FROM runs WHERE backfill_id=? AND chunk >= ?`, backfillID, from)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Key] = r.FP
	}
	return out, nil
}

// RunsAwaitingRetry lists backfill backfillID's runs queued after a failed
// attempt (waiting for their retry), by chunk: when the backfill is
// canceled they never retry.
func RunsAwaitingRetry(ctx context.Context, q getter, backfillID string) ([]Run, error) {
	return selectAll[Run](ctx, q, `SELECT * FROM runs WHERE backfill_id=? AND state='queued' AND attempts > 0 ORDER BY chunk`, backfillID)
}

// FirstQueuedRun returns backfill backfillID's queued run of the lowest
// chunk; ok is false when none is queued.
func (s *Store) FirstQueuedRun(ctx context.Context, backfillID string) (r Run, ok bool, err error) {
	return firstRun(ctx, s, `SELECT * FROM runs WHERE backfill_id=? AND state='queued' ORDER BY chunk LIMIT 1`, backfillID)
}

// FirstUnfinishedRunIn returns backfill backfillID's queued or running run
// of the lowest chunk in [lo, hi]: the upstream chunk a downstream run waits
// for. ok is false when none is.
func (s *Store) FirstUnfinishedRunIn(ctx context.Context, backfillID string, lo, hi int64) (r Run, ok bool, err error) {
	return firstRun(ctx, s, `SELECT * FROM runs WHERE backfill_id=? AND chunk BETWEEN ? AND ? AND state IN ('queued','running') ORDER BY chunk LIMIT 1`, backfillID, lo, hi)
}

func firstRun(ctx context.Context, s *Store, query string, args ...any) (Run, bool, error) {
	var r Run
	err := s.r.GetContext(ctx, &r, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}
