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
-- Pool throttles count the attempts of their assets started within their
-- period, across instances (AttemptStartsSince): at most the throttle's
-- runs a pool. Partial, so that the planner never takes it for the
-- running attempts of an asset (state='running' AND asset_id=?, which
-- attempts_running serves): only a query that says started_at > 0 may
-- use it.
CREATE INDEX attempts_by_asset_start ON attempts (asset_id, started_at) WHERE started_at > 0;

-- +goose Down
DROP INDEX attempts_by_asset_start;
DROP TABLE leader;
