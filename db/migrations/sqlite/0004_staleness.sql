-- +goose Up
-- Staleness is computed when read, never stored. This covering index lets one
-- asset's facts be read in index order without touching the table.
CREATE INDEX partition_status_staleness ON partition_status
    (asset_id, idx, materialized, last_mat_at, tainted_at, status, last_mat_code_version);

-- The live pipeline's ceiling: the last partition it has processed, per asset.
CREATE TABLE watermarks (
    asset_id      INTEGER PRIMARY KEY REFERENCES assets(id) ON DELETE CASCADE,
    partition_key TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    set_at        INTEGER NOT NULL,
    actor         TEXT NOT NULL
);

-- Taints, kept per instance: the status row holds the current one, this table
-- answers "was this instance tainted at time t" and keeps who and why.
CREATE TABLE partition_taints (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    asset_id      INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    partition_key TEXT NOT NULL,
    instance_id   TEXT,
    reason        TEXT NOT NULL,
    actor         TEXT NOT NULL,
    tainted_at    INTEGER NOT NULL,
    cleared_at    INTEGER,
    cleared_by    TEXT
);
CREATE INDEX partition_taints_by_partition ON partition_taints (asset_id, partition_key, tainted_at);

-- The status board asks each asset for its most recent attempt.
CREATE INDEX partition_status_last_attempt ON partition_status (asset_id, last_attempt_at);

-- +goose Down
DROP INDEX partition_status_last_attempt;
DROP TABLE partition_taints;
DROP TABLE watermarks;
DROP INDEX partition_status_staleness;
