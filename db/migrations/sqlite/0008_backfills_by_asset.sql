-- +goose Up
-- Backfills that select an asset, for the asset filter of the backfill list.
CREATE INDEX backfill_segments_by_asset ON backfill_segments (asset, backfill_id);

-- +goose Down
DROP INDEX backfill_segments_by_asset;
