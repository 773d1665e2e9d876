-- +goose Up
-- Partition instances clustered by partition: the primary key (asset,
-- partition, id) is the table itself, so recording an instance writes one
-- B-tree instead of three (rowid table, id index, by-partition index), a
-- partition's history is one contiguous range, and the engine (which always
-- knows the asset and partition of an instance) finds an instance by its key.
CREATE TABLE partition_instances_new (
    id             TEXT NOT NULL,
    asset_id       INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    partition_key  TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    status         TEXT NOT NULL,
    code_version   TEXT NOT NULL DEFAULT '',
    metadata       TEXT,
    error          TEXT,
    source         TEXT NOT NULL DEFAULT 'api',
    started_at     INTEGER,
    finished_at    INTEGER,
    supersedes_id  TEXT,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (asset_id, partition_key, id)
) WITHOUT ROWID;
INSERT INTO partition_instances_new (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at)
    SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at FROM partition_instances;
DROP TABLE partition_instances;
ALTER TABLE partition_instances_new RENAME TO partition_instances;

-- +goose Down
CREATE TABLE partition_instances_old (
    id             TEXT PRIMARY KEY,
    asset_id       INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    partition_key  TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    status         TEXT NOT NULL,
    code_version   TEXT NOT NULL DEFAULT '',
    metadata       TEXT,
    error          TEXT,
    source         TEXT NOT NULL DEFAULT 'api',
    started_at     INTEGER,
    finished_at    INTEGER,
    supersedes_id  TEXT,
    created_at     INTEGER NOT NULL
);
INSERT INTO partition_instances_old SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at FROM partition_instances;
DROP TABLE partition_instances;
ALTER TABLE partition_instances_old RENAME TO partition_instances;
CREATE INDEX partition_instances_by_partition ON partition_instances (asset_id, partition_key, created_at);
