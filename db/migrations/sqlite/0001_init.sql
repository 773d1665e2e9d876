-- +goose Up
-- Assets are synced from the workspace file; a changed definition bumps definition_version.
CREATE TABLE assets (
    id                   INTEGER PRIMARY KEY,
    key                  TEXT NOT NULL UNIQUE,
    grp                  TEXT NOT NULL DEFAULT '',
    description          TEXT NOT NULL DEFAULT '',
    scheme_kind          TEXT NOT NULL,
    scheme_description   TEXT NOT NULL,
    scheme_signature     TEXT NOT NULL,
    code_version         TEXT NOT NULL DEFAULT '',
    definition           TEXT NOT NULL,
    definition_version   INTEGER NOT NULL DEFAULT 1,
    last_materialized_at INTEGER,
    removed              INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
);

-- Keys of dynamic partition sets, in the order they were added.
CREATE TABLE dynamic_partitions (
    set_name   TEXT NOT NULL,
    key        TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    added_at   INTEGER NOT NULL,
    PRIMARY KEY (set_name, key),
    UNIQUE (set_name, seq)
);

-- One row per asset partition that has ever been attempted; a missing row means
-- the partition was never attempted. idx is the partition's position in the
-- asset's partition space, so ranges and buckets are integer arithmetic.
CREATE TABLE partition_status (
    asset_id              INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    partition_key         TEXT NOT NULL,
    idx                   INTEGER NOT NULL,
    status                TEXT NOT NULL CHECK (status IN ('materialized','failed','in_progress')),
    materialized          INTEGER NOT NULL DEFAULT 0,
    last_mat_instance_id  TEXT,
    last_mat_run_id       TEXT,
    last_mat_at           INTEGER,
    last_mat_code_version TEXT,
    last_mat_metadata     TEXT,
    last_attempt_instance_id TEXT,
    last_attempt_run_id   TEXT,
    last_attempt_at       INTEGER,
    last_attempt_status   TEXT,
    last_attempt_error    TEXT,
    canonical_instance_id TEXT,
    tainted_at            INTEGER,
    taint_reason          TEXT,
    updated_at            INTEGER NOT NULL,
    PRIMARY KEY (asset_id, partition_key)
) WITHOUT ROWID;
CREATE INDEX partition_status_idx ON partition_status (asset_id, idx);

-- Counts of partition_status rows per asset, block of 1024 indexes and status,
-- maintained in the same transaction as partition_status: grids of a million
-- partitions and health bars read this instead of scanning.
CREATE TABLE partition_rollup (
    asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    block    INTEGER NOT NULL,
    status   TEXT NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (asset_id, block, status)
) WITHOUT ROWID;

-- Every attempt to build a partition is an immutable instance; its id is derived
-- from (run id, asset, partition).
CREATE TABLE partition_instances (
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
CREATE INDEX partition_instances_by_partition ON partition_instances (asset_id, partition_key, created_at);

-- Append-only audit log; every command writes its event in the same
-- transaction as its projection changes.
CREATE TABLE events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    type            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    actor           TEXT NOT NULL,
    payload         TEXT NOT NULL DEFAULT '{}',
    idempotency_key TEXT UNIQUE,
    at              INTEGER NOT NULL
);
CREATE INDEX events_by_subject ON events (subject, id);

-- Server-wide settings and secrets generated on first start.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP TABLE events;
DROP TABLE partition_instances;
DROP TABLE partition_rollup;
DROP TABLE partition_status;
DROP TABLE dynamic_partitions;
DROP TABLE assets;
