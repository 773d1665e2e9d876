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

-- partition_status_all: every partition's status as a row, those status
-- ranges hold expanded (what partition_status held before this migration).
-- For people and tests reading the database with SQL; the store's readers
-- merge ranges themselves, by index or key, without expanding them all.
CREATE VIEW partition_status_all AS
    SELECT asset_id, partition_key, idx, status, materialized, last_mat_instance_id, last_mat_run_id, last_mat_at, last_mat_code_version, last_mat_metadata,
        last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, last_attempt_error, tainted_at, taint_reason, updated_at,
        lease_instance_id, lease_run_id, lease_code_version
    FROM partition_status
    UNION ALL
    SELECT r.asset_id, k.value, r.lo + k.key, 'materialized', 1, tessera_instance_id(r.run_id, r.attempt, r.asset_key, k.value), r.run_id, r.finished_at, r.code_version, NULL,
        NULL, NULL, r.finished_at, 'materialized', NULL, NULL, NULL, r.finished_at,
        NULL, NULL, NULL
    FROM status_ranges r, json_each(r.keys) AS k;

-- partition_instances_all: partition_instances and the instances status
-- ranges hold, for the same readers.
CREATE VIEW partition_instances_all AS
    SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at
    FROM partition_instances
    UNION ALL
    SELECT tessera_instance_id(r.run_id, r.attempt, r.asset_key, k.value), r.asset_id, k.value, r.run_id, 'materialized', r.code_version, NULL, NULL,
        'backfill', r.started_at, r.finished_at, NULL, r.started_at
    FROM status_ranges r, json_each(r.keys) AS k;

-- +goose Down
DROP VIEW partition_instances_all;
DROP VIEW partition_status_all;
DROP TABLE status_ranges;
