-- +goose Up
-- A covering index of the events' heads by subject: the timeline of a
-- backfill's page reads its 40 newest events without their payloads
-- (EventHeadsBySubject), but idempotency_key and at come after the payload
-- in a row, so reading them walked each attempts event's payload (hundreds
-- of kilobytes, in overflow pages) on every view of a running backfill.
-- It replaces events_by_subject, of which it is an extension.
CREATE INDEX events_heads_by_subject ON events (subject, id, type, actor, at, idempotency_key);
DROP INDEX events_by_subject;

-- +goose Down
CREATE INDEX events_by_subject ON events (subject, id);
DROP INDEX events_heads_by_subject;
