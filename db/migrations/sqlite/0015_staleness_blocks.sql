-- +goose Up
-- The staleness facts of every status row (index, status, materialized,
-- tainted, last materialization time and code version), packed per block of
-- 1024 indexes (RollupShift), so that the first staleness view after a start
-- reads a few thousand blobs instead of every status row. A block's facts are
-- NULL when unknown: every write to a status row of the block sets them NULL
-- and draws a new gen in its own transaction (markStaleBlocks), and facts
-- computed from the rows are stored only while gen is still the one read
-- before those rows (db/staleness_blocks.go), so stored facts never differ
-- from the rows. Migration 16 (Go, db/staleness_blocks_migration.go) fills
-- the facts of the existing rows.
CREATE TABLE staleness_blocks (
    asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    block    INTEGER NOT NULL,
    gen      INTEGER NOT NULL,
    facts    BLOB,
    PRIMARY KEY (asset_id, block)
);

-- +goose Down
DROP TABLE staleness_blocks;
