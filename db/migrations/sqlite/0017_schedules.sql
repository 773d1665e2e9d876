-- +goose Up
-- A schedule's runtime state: the workspace declares schedules, this keeps
-- what the scheduler and the operators did with them. last_tick_at is the
-- newest scheduled tick evaluated (launched, queued or skipped): ticks are
-- evaluated oldest first and last_tick_at advances in the transaction that
-- records each, so a crash never skips or repeats one.
CREATE TABLE schedule_state (
    name             TEXT PRIMARY KEY,
    paused           INTEGER NOT NULL DEFAULT 0,
    paused_by        TEXT,
    paused_at        INTEGER,
    last_tick_at     INTEGER NOT NULL,
    last_backfill_id TEXT,
    state_version    INTEGER NOT NULL DEFAULT 1,
    ticks_launched   INTEGER NOT NULL DEFAULT 0,
    ticks_skipped    INTEGER NOT NULL DEFAULT 0,
    ticks_failed     INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- One row per tick: id is '{schedule}:{scheduled_for unix seconds}' (or
-- '{schedule}:manual:{id}' for a run now), the idempotency key of the
-- backfill it launched. A queued tick waits for the previous tick's
-- backfill to end (overlap: queue) and becomes launched.
CREATE TABLE schedule_ticks (
    id              TEXT PRIMARY KEY,
    schedule        TEXT NOT NULL,
    scheduled_for   INTEGER NOT NULL,
    evaluated_at    INTEGER NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('launched', 'queued', 'skipped', 'failed')),
    reason          TEXT,
    definition_hash TEXT NOT NULL,
    backfill_id     TEXT,
    manual          INTEGER NOT NULL DEFAULT 0,
    actor           TEXT NOT NULL
);
CREATE INDEX schedule_ticks_by_schedule ON schedule_ticks (schedule, scheduled_for, id);
CREATE INDEX schedule_ticks_queued ON schedule_ticks (schedule, scheduled_for) WHERE outcome = 'queued';

-- +goose Down
DROP TABLE schedule_ticks;
DROP TABLE schedule_state;
