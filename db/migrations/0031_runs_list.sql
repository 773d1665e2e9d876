-- +goose Up
-- The runs list (/runs, GET /api/v1/runs) reads runs newest first,
-- (created_at, id) descending, a page at a time from the last row of the
-- page before (keyset), optionally of one asset, in some states or of one
-- backfill, and queued in a time range. Each filter has an index in that
-- order, so that a page reads about its own rows even among the million
-- runs of a large backfill (without them, a filter matching few runs read
-- every run, and the backfill filter sorted all of that backfill's runs).
CREATE INDEX runs_by_created ON runs (created_at, id);
CREATE INDEX runs_by_asset ON runs (asset, created_at, id);
CREATE INDEX runs_by_state ON runs (state, created_at, id);
CREATE INDEX runs_by_backfill_created ON runs (backfill_id, created_at, id);

-- +goose Down
DROP INDEX runs_by_backfill_created;
DROP INDEX runs_by_state;
DROP INDEX runs_by_asset;
DROP INDEX runs_by_created;
