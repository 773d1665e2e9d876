package db

import (
	"context"
	"database/sql"
	"fmt"
)

// The controller reads every active backfill at each step: with thousands
// active (a storm of pushed events, a burst of ticks), sqlx's reflection
// over the 31 columns of each row was the largest part of a step. The
// active backfills are scanned by hand, column by column.

const backfillColumns = `id, seq, title, state, state_version, assets, selector, chunk_size, max_concurrent_runs, priority,
	total_partitions, total_chunks, next_chunk, runs_active, runs_running, runs_succeeded, runs_failed, runs_canceled,
	partitions_materialized, partitions_failed, partitions_upstream_failed, terminate, parent_backfill_id, retry_request_id,
	request_key, request_hash, created_by, created_at, updated_at, started_at, finished_at`

type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanBackfills runs query, which selects backfillColumns, and scans its rows.
func scanBackfills(ctx context.Context, q Querier, query string, args ...any) ([]Backfill, error) {
	rq, ok := q.(rowsQuerier)
	if !ok {
		return nil, fmt.Errorf("scanBackfills: %T cannot query rows", q)
	}
	rows, err := rq.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Backfill
	for rows.Next() {
		var b Backfill
		if err := rows.Scan(&b.ID, &b.Seq, &b.Title, &b.State, &b.StateVersion, &b.Assets, &b.Selector, &b.ChunkSize, &b.MaxConcurrentRuns, &b.Priority,
			&b.TotalPartitions, &b.TotalChunks, &b.NextChunk, &b.RunsActive, &b.RunsRunning, &b.RunsSucceeded, &b.RunsFailed, &b.RunsCanceled,
			&b.PartitionsMaterialized, &b.PartitionsFailed, &b.PartitionsUpstreamFailed, &b.Terminate, &b.ParentBackfillID, &b.RetryRequestID,
			&b.RequestKey, &b.RequestHash, &b.CreatedBy, &b.CreatedAt, &b.UpdatedAt, &b.StartedAt, &b.FinishedAt); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
