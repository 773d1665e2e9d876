-- +goose Up
-- Status per attempt as index ranges (db/status_ranges.go): the partitions
-- an engine attempt leased without a status row and materialized plainly
-- (no metadata, no error), consecutive indexes within a block of 1,024 and
-- keys in increasing order, are one row here instead of a
-- partition_status row each (and an instance_ranges row). keys is the JSON
-- array of their keys, index lo first. A partition is a status row or in a
-- status range, never both; a write to one in a range turns the range into
-- rows first. The key intervals [first_key, last_key] of an asset's ranges
-- do not overlap, so that the range holding a key is the first whose
-- last_key is not below it.
CREATE TABLE status_ranges (
    asset_id     INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    block        INTEGER NOT NULL, -- lo >> 10 (and hi >> 10)
    lo           INTEGER NOT NULL,
    hi           INTEGER NOT NULL,
    first_key    TEXT NOT NULL,
    last_key     TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    asset_key    TEXT NOT NULL,    -- what the instance ids are derived from
    code_version TEXT NOT NULL,
    started_at   INTEGER NOT NULL, -- the attempt's start
    finished_at  INTEGER NOT NULL, -- its end: last materialized, last attempt, updated
    keys         TEXT NOT NULL,
    PRIMARY KEY (asset_id, block, lo)
) WITHOUT ROWID;
CREATE INDEX status_ranges_by_key ON status_ranges (asset_id, last_key);

-- +goose Down
DROP TABLE status_ranges;
