-- +goose Up
-- PostgreSQL's 0027 (the shared one's INTEGER is 32 bits here): a backfill
-- of several assets may cut each asset's partitions into chunks of its own
-- size (24 hours, but 7 days); 0 = the backfill's chunk_size.
ALTER TABLE backfill_segments ADD COLUMN chunk_size BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE backfill_segments DROP COLUMN chunk_size;
