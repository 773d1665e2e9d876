-- +goose Up
-- A sensor's runtime state. cursor is the poll evaluator's position; it
-- moves only with a compare-and-set on state_version in the transaction
-- that creates the backfills its evaluation requested, so it is never lost
-- and never ahead of what was launched.
CREATE TABLE sensor_state (
    name               TEXT PRIMARY KEY,
    paused             INTEGER NOT NULL DEFAULT 0,
    paused_by          TEXT,
    paused_at          INTEGER,
    cursor             TEXT,
    state_version      INTEGER NOT NULL DEFAULT 1,
    status             TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'error')),
    last_error         TEXT,
    failures           INTEGER NOT NULL DEFAULT 0,
    last_evaluated_at  INTEGER,
    next_evaluation_at INTEGER,
    events_accepted    INTEGER NOT NULL DEFAULT 0,
    launches           INTEGER NOT NULL DEFAULT 0,
    evaluations        INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);

-- Pushed events, one per (sensor, message_id): the same message_id always
-- answers its first outcome.
CREATE TABLE sensor_events (
    sensor      TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('launched', 'skipped')),
    reason      TEXT,
    backfill_id TEXT,
    actor       TEXT NOT NULL,
    PRIMARY KEY (sensor, message_id)
) WITHOUT ROWID;
CREATE INDEX sensor_events_by_time ON sensor_events (sensor, received_at);

-- Evaluations of poll sensors (kind evaluation or dry_run) and cursor resets.
CREATE TABLE sensor_evaluations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    sensor        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('evaluation', 'dry_run', 'reset')),
    started_at    INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    cursor_before TEXT,
    cursor_after  TEXT,
    requests      TEXT NOT NULL DEFAULT '[]',
    skip_reason   TEXT,
    error         TEXT,
    log_tail      TEXT,
    actor         TEXT NOT NULL
);
CREATE INDEX sensor_evaluations_by_sensor ON sensor_evaluations (sensor, id);

-- run_key of each run request a poll sensor launched: at most once, ever.
CREATE TABLE sensor_run_keys (
    sensor      TEXT NOT NULL,
    run_key     TEXT NOT NULL,
    backfill_id TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (sensor, run_key)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE sensor_run_keys;
DROP TABLE sensor_evaluations;
DROP TABLE sensor_events;
DROP TABLE sensor_state;
