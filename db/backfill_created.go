package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// BackfillCreated is the payload of backfill.created.
type BackfillCreated struct {
	Backfill Backfill             `json:"backfill"`
	Segments []Segment            `json:"segments"`
	Ranges   map[int64][]SelRange `json:"ranges,omitempty"`
	Keys     []string             `json:"keys,omitempty"`
}

func applyCreated(ctx context.Context, tx *sqlx.Tx, p BackfillCreated) error {
	b := p.Backfill
	if _, err := tx.NamedExecContext(ctx, `INSERT INTO backfills (id, seq, title, state, state_version, assets, selector, chunk_size, max_concurrent_runs, priority,
		total_partitions, total_chunks, next_chunk, terminate, parent_backfill_id, retry_request_id, request_key, request_hash, created_by, created_at, updated_at)
		VALUES (:id, (SELECT COALESCE(MAX(seq),0)+1 FROM backfills), :title, :state, :state_version, :assets, :selector, :chunk_size, :max_concurrent_runs, :priority,
		:total_partitions, :total_chunks, 0, 0, :parent_backfill_id, :retry_request_id, :request_key, :request_hash, :created_by, :created_at, :updated_at)`, b); err != nil {
		return err
	}
	for _, s := range p.Segments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_segments (backfill_id, pos, asset, asset_id, partitions, first_chunk, chunks, explicit, chunk_size) VALUES (?,?,?,?,?,?,?,?,?)`,
			b.ID, s.Pos, s.Asset, s.AssetID, s.Partitions, s.FirstChunk, s.Chunks, s.Explicit, s.ChunkSize); err != nil {
			return err
		}
		for _, r := range p.Ranges[s.Pos] {
			if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_ranges (backfill_id, pos, start, lo, hi) VALUES (?,?,?,?,?)`, b.ID, s.Pos, r.Start, r.Lo, r.Hi); err != nil {
				return err
			}
		}
	}
	// Keys go in by blocks of KeyBlock, each a JSON array (see
	// backfill_keys.go), many blocks a statement.
	return insertKeyBlocks(ctx, tx, b.ID, p.Keys)
}
