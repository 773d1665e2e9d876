package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// This file holds the writes of the benchmark commands (tessera bench …)
// that fill projection tables directly, without the engine's events, to
// build large databases fast. Nothing else may call them.

// RawCeiling opens a fresh database at path and upserts n status rows into
// a bare table, 1,000 per transaction: rows per second, the most this
// machine's SQLite writes through this driver (the engine's ceiling).
func RawCeiling(ctx context.Context, path string, n int64) (float64, error) {
	store, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	if _, err := store.w.ExecContext(ctx, `CREATE TABLE raw_status (asset_id INTEGER NOT NULL, partition_key TEXT NOT NULL, idx INTEGER NOT NULL,
		status TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (asset_id, partition_key)) WITHOUT ROWID`); err != nil {
		return 0, err
	}
	t := time.Now()
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for lo := int64(0); lo < n; lo += 1000 {
		tx, err := store.w.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO raw_status (asset_id, partition_key, idx, status, updated_at) VALUES (1,?,?,'materialized',?)
			ON CONFLICT (asset_id, partition_key) DO UPDATE SET status=excluded.status, updated_at=excluded.updated_at`)
		if err != nil {
			_ = tx.Rollback()
			return 0, err
		}
		for i := lo; i < min(lo+1000, n); i++ {
			if _, err := st.ExecContext(ctx, base.Add(time.Duration(i)*time.Hour).Format("2006-01-02-15:04"), i, i); err != nil {
				_ = tx.Rollback()
				return 0, err
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(t).Seconds(), nil
}

// FixtureRun is a finished or running chunk run (with its one attempt)
// written by SeedRunsFixture.
type FixtureRun struct {
	ID, RunKey, Asset, Fingerprint, FirstKey, LastKey string
	Chunk, Partitions, Materialized, Failed           int64
	State                                             string
	Error                                             *string
	At, End                                           int64
	FinishedAt                                        *int64
}

// FixtureProgress is the backfill's counters after SeedRunsFixture.
type FixtureProgress struct {
	NextChunk, Running, Succeeded, Failed, PartitionsMaterialized, PartitionsFailed, StartedAt int64
}

// SeedRunsFixture writes runs (each with one attempt owned by "bench") of
// backfill backfillID and sets the backfill RUNNING with counters p, in one
// transaction.
func (s *Store) SeedRunsFixture(ctx context.Context, backfillID string, assetID int64, runs []FixtureRun, p FixtureProgress) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		runStmt, err := tx.PreparexContext(ctx, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key,
			state, attempts, max_attempts, materialized, failed, error, created_at, updated_at, started_at, finished_at)
			VALUES (?,?,?,?,0,?,?,?,?,?,?,?,1,3,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer runStmt.Close()
		attStmt, err := tx.PreparexContext(ctx, `INSERT INTO attempts (run_id, attempt, state, owner, partitions, started_at, finished_at, error) VALUES (?,1,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer attStmt.Close()
		for _, r := range runs {
			if _, err := runStmt.ExecContext(ctx, r.ID, r.RunKey, backfillID, r.Chunk, r.Asset, assetID, r.Fingerprint, r.Partitions, r.FirstKey, r.LastKey,
				r.State, r.Materialized, r.Failed, r.Error, r.At, r.End, r.At, r.FinishedAt); err != nil {
				return err
			}
			if _, err := attStmt.ExecContext(ctx, r.ID, r.State, "bench", r.Partitions, r.At, r.FinishedAt, r.Error); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE backfills SET state='RUNNING', state_version=2, next_chunk=?, runs_active=?, runs_running=?, runs_succeeded=?, runs_failed=?,
			partitions_materialized=?, partitions_failed=?, started_at=? WHERE id=?`, p.NextChunk, p.Running, p.Running, p.Succeeded, p.Failed,
			p.PartitionsMaterialized, p.PartitionsFailed, p.StartedAt, backfillID)
		return err
	})
}

// FixtureStatus is one partition status row written by
// InsertStatusFixtures. MatAt and MatCode are nil when it was never
// materialized; TaintedAt and TaintReason nil when it is not tainted.
type FixtureStatus struct {
	AssetID      int64
	Key          string
	Idx          int64
	Status       string
	Materialized bool
	MatAt        *int64
	MatCode      *string
	AttemptAt    int64
	TaintedAt    *int64
	TaintReason  *string
	UpdatedAt    int64
}

// InsertStatusFixtures writes status rows in one transaction (no event:
// FinishStatusFixtures appends one and rebuilds what they feed).
func (s *Store) InsertStatusFixtures(ctx context.Context, rows []FixtureStatus) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		stmt, err := tx.PreparexContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, last_mat_at, last_mat_code_version,
			last_attempt_at, last_attempt_status, tainted_at, taint_reason, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, r.AssetID, r.Key, r.Idx, r.Status, r.Materialized, r.MatAt, r.MatCode, r.AttemptAt, r.Status,
				r.TaintedAt, r.TaintReason, r.UpdatedAt); err != nil {
				return err
			}
		}
		return nil
	})
}

// FinishStatusFixtures rebuilds the rollup, the assets' last attempts and
// the persisted staleness facts from the status rows, appends a bench.loaded event (so that memoized
// facts know the data changed) and analyzes the database.
func (s *Store) FinishStatusFixtures(ctx context.Context, rows int64, now time.Time) error {
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM partition_rollup`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO partition_rollup (asset_id, block, status, n)
			SELECT asset_id, idx >> ?, status, COUNT(*) FROM partition_status WHERE idx >= 0 GROUP BY asset_id, idx >> ?, status`, RollupShift, RollupShift); err != nil {
			return err
		}
		if err := RecomputeLastAttempts(ctx, tx); err != nil {
			return err
		}
		// The persisted staleness facts, as migration 16 stores them for a
		// database written before it.
		if _, err := tx.ExecContext(ctx, `DELETE FROM staleness_blocks`); err != nil {
			return err
		}
		if err := fillStaleBlocks(ctx, tx); err != nil {
			return err
		}
		_, err := AppendEvent(ctx, tx, "bench.loaded", "bench", "bench", map[string]any{"rows": rows}, "", now)
		return err
	})
	if err == nil {
		_, err = s.writer(ctx).ExecContext(ctx, `ANALYZE`)
	}
	return err
}

// AppendBenchEvent appends an event of no known effect: every memoized
// fact is computed again after it (as after a restart).
func (s *Store) AppendBenchEvent(ctx context.Context, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		_, err := AppendEvent(ctx, tx, "bench.write", "bench", "bench", map[string]any{}, "", now)
		return err
	})
}

// TickLag is a launched schedule tick: when it was due and when its
// backfill was created (bench automation).
type TickLag struct {
	ScheduledFor int64 `db:"scheduled_for"`
	CreatedAt    int64 `db:"created_at"`
}

// TickLags lists the launched ticks of every schedule with their
// backfill's creation time.
func (s *Store) TickLags(ctx context.Context) ([]TickLag, error) {
	return selectAll[TickLag](ctx, s.r, `SELECT t.scheduled_for, b.created_at FROM schedule_ticks t JOIN backfills b ON b.id = t.backfill_id
		WHERE t.outcome = 'launched' ORDER BY t.scheduled_for`)
}

// ScheduledBackfills counts the backfills schedules created (created_by
// "schedule:…"): one per launched tick, or some tick launched twice.
func (s *Store) ScheduledBackfills(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM backfills WHERE created_by LIKE 'schedule:%'`)
	return n, err
}

// SensorLaunches counts the backfills sensor launched (created_by
// "sensor:NAME").
func (s *Store) SensorLaunches(ctx context.Context, sensor string) (int64, error) {
	var n int64
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM backfills WHERE created_by = ?`, "sensor:"+sensor)
	return n, err
}
