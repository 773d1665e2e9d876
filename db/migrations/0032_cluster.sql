-- +goose Up
-- Several instances on one database (issue 23). leader holds the leases of
-- the jobs only one instance runs (schedules, poll sensors): name, who
-- holds it and until when (Unix ms); an instance takes it when it has
-- expired and renews it while it lives (LeadFor).
CREATE TABLE leader (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
-- Pool throttles count the attempts started within their period, across
-- instances (AttemptStartsSince).
CREATE INDEX attempts_by_start ON attempts (started_at);

-- +goose Down
DROP INDEX attempts_by_start;
DROP TABLE leader;
