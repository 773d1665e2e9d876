-- +goose Up
-- History retention (serve --automation-retention): schedule ticks, sensor
-- evaluations and pushed events older than it are pruned in batches, and
-- each schedule and sensor keeps how many of its own were pruned.
ALTER TABLE schedule_state ADD COLUMN pruned_ticks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensor_state ADD COLUMN pruned_evaluations INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensor_state ADD COLUMN pruned_events INTEGER NOT NULL DEFAULT 0;

-- The pruning finds the oldest rows by time.
CREATE INDEX schedule_ticks_by_evaluated ON schedule_ticks (evaluated_at);
CREATE INDEX sensor_evaluations_by_started ON sensor_evaluations (started_at);
CREATE INDEX sensor_events_by_received ON sensor_events (received_at);

-- A pruned event leaves its message id here, with its first outcome: the
-- same message id still answers "duplicate" (200, replayed) and launches
-- nothing, after the retention too. Only the event's history row (its
-- reason, its actor, its place in the paged list) goes.
CREATE TABLE sensor_event_ids (
    sensor      TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    backfill_id TEXT,
    PRIMARY KEY (sensor, message_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE sensor_event_ids;
DROP INDEX sensor_events_by_received;
DROP INDEX sensor_evaluations_by_started;
DROP INDEX schedule_ticks_by_evaluated;
ALTER TABLE sensor_state DROP COLUMN pruned_events;
ALTER TABLE sensor_state DROP COLUMN pruned_evaluations;
ALTER TABLE schedule_state DROP COLUMN pruned_ticks;
