-- +goose Up
-- What each finished attempt built and failed, counted from its partitions
-- when it ends: the throughput chart counted every partition of an attempt
-- that did not succeed as failed (those it built too, and those of an
-- attempt canceled or interrupted), so its bars added up to more than the
-- backfill's partitions. NULL for attempts finished before (read as before).
ALTER TABLE attempts ADD COLUMN materialized INTEGER;
ALTER TABLE attempts ADD COLUMN failed INTEGER;

-- +goose Down
ALTER TABLE attempts DROP COLUMN failed;
ALTER TABLE attempts DROP COLUMN materialized;
