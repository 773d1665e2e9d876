-- +goose Up
-- Backfills: a request to materialize a selection of partitions of one or more
-- assets, in chunk runs. Every table below except workers and attempt_logs is
-- a projection of the events table (see db/backfill_apply.go and db/replay.go).
CREATE TABLE backfills (
    id                   TEXT PRIMARY KEY,
    seq                  INTEGER NOT NULL UNIQUE,
    title                TEXT NOT NULL DEFAULT '',
    state                TEXT NOT NULL,
    state_version        INTEGER NOT NULL DEFAULT 1,
    assets               TEXT NOT NULL,
    selector             TEXT NOT NULL,
    chunk_size           INTEGER NOT NULL,
    max_concurrent_runs  INTEGER NOT NULL,
    priority             INTEGER NOT NULL DEFAULT 0,
    total_partitions     INTEGER NOT NULL,
    total_chunks         INTEGER NOT NULL,
    next_chunk           INTEGER NOT NULL DEFAULT 0,
    runs_active          INTEGER NOT NULL DEFAULT 0,
    runs_running         INTEGER NOT NULL DEFAULT 0,
    runs_succeeded       INTEGER NOT NULL DEFAULT 0,
    runs_failed          INTEGER NOT NULL DEFAULT 0,
    runs_canceled        INTEGER NOT NULL DEFAULT 0,
    partitions_materialized    INTEGER NOT NULL DEFAULT 0,
    partitions_failed          INTEGER NOT NULL DEFAULT 0,
    partitions_upstream_failed INTEGER NOT NULL DEFAULT 0,
    terminate            INTEGER NOT NULL DEFAULT 0,
    parent_backfill_id   TEXT,
    retry_request_id     TEXT,
    request_key          TEXT UNIQUE,
    request_hash         TEXT NOT NULL DEFAULT '',
    created_by           TEXT NOT NULL,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    started_at           INTEGER,
    finished_at          INTEGER,
    UNIQUE (parent_backfill_id, retry_request_id)
);
CREATE INDEX backfills_by_state ON backfills (state, seq);

-- One segment per selected asset, in dependency order; chunks are numbered
-- across segments.
CREATE TABLE backfill_segments (
    backfill_id  TEXT NOT NULL REFERENCES backfills(id) ON DELETE CASCADE,
    pos          INTEGER NOT NULL,
    asset        TEXT NOT NULL,
    asset_id     INTEGER NOT NULL,
    partitions   INTEGER NOT NULL,
    first_chunk  INTEGER NOT NULL,
    chunks       INTEGER NOT NULL,
    explicit     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (backfill_id, pos)
) WITHOUT ROWID;

-- The selection of a segment as index ranges; start is the selection
-- position of lo. A range selector is one row; a status filter snapshot a few.
CREATE TABLE backfill_ranges (
    backfill_id TEXT NOT NULL,
    pos         INTEGER NOT NULL,
    start       INTEGER NOT NULL,
    lo          INTEGER NOT NULL,
    hi          INTEGER NOT NULL,
    PRIMARY KEY (backfill_id, pos, start)
) WITHOUT ROWID;

-- Explicit key lists, stored outside the backfill row (shared by its segments).
CREATE TABLE backfill_keys (
    backfill_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    key         TEXT NOT NULL,
    PRIMARY KEY (backfill_id, n)
) WITHOUT ROWID;

-- Partitions a backfill finally failed to build (failed) or did not attempt
-- because an upstream partition failed (upstream_failed).
CREATE TABLE backfill_failures (
    backfill_id   TEXT NOT NULL,
    asset_id      INTEGER NOT NULL,
    partition_key TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    reason        TEXT NOT NULL,
    run_id        TEXT NOT NULL,
    PRIMARY KEY (backfill_id, asset_id, partition_key)
) WITHOUT ROWID;
CREATE INDEX backfill_failures_by_idx ON backfill_failures (backfill_id, asset_id, idx);

-- Chunk runs. run_key = backfill:{id}:chunk:{i}; id = HMAC(secret, run_key).
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    run_key         TEXT NOT NULL UNIQUE,
    backfill_id     TEXT NOT NULL,
    chunk           INTEGER NOT NULL,
    seg             INTEGER NOT NULL,
    asset           TEXT NOT NULL,
    asset_id        INTEGER NOT NULL,
    fingerprint     TEXT NOT NULL,
    partitions      INTEGER NOT NULL,
    first_key       TEXT NOT NULL DEFAULT '',
    last_key        TEXT NOT NULL DEFAULT '',
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    not_before      INTEGER,
    materialized    INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0,
    upstream_failed INTEGER NOT NULL DEFAULT 0,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER,
    UNIQUE (backfill_id, chunk)
);
CREATE INDEX runs_active ON runs (state) WHERE state IN ('queued', 'running');

-- Attempts of a run; a running attempt is leased by its owner (a server
-- process, see workers) until the owner stops heartbeating.
CREATE TABLE attempts (
    run_id      TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    state       TEXT NOT NULL,
    owner       TEXT NOT NULL,
    partitions  INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    error       TEXT,
    PRIMARY KEY (run_id, attempt)
) WITHOUT ROWID;
CREATE INDEX attempts_running ON attempts (state) WHERE state = 'running';

-- Run keys requested again with a different fingerprint.
CREATE TABLE conflicts (
    id                    INTEGER PRIMARY KEY,
    run_key               TEXT NOT NULL,
    backfill_id           TEXT NOT NULL,
    existing_fingerprint  TEXT NOT NULL,
    requested_fingerprint TEXT NOT NULL,
    at                    INTEGER NOT NULL
);

-- Not projections: process heartbeats (attempt leases) and bounded attempt logs.
CREATE TABLE workers (
    owner        TEXT PRIMARY KEY,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);
CREATE TABLE attempt_logs (
    run_id  TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    log     TEXT NOT NULL,
    PRIMARY KEY (run_id, attempt)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE attempt_logs;
DROP TABLE workers;
DROP TABLE conflicts;
DROP TABLE attempts;
DROP TABLE runs;
DROP TABLE backfill_failures;
DROP TABLE backfill_keys;
DROP TABLE backfill_ranges;
DROP TABLE backfill_segments;
DROP TABLE backfills;
