-- +goose Up
-- Leases per attempt: a partition that has no status row when an attempt
-- starts gets none until the attempt ends (the status row is then written
-- once, with the attempt's result). Meanwhile the attempt's row holds its
-- lease on those partitions: asset_id, the smallest and largest index
-- leased (lease_lo, lease_hi) and the leased partitions as index ranges and
-- keys (lease, JSON; see db/attempt_leases.go). Readers of partition
-- statuses merge the leases of running attempts as in-progress rows. The
-- lease columns are cleared when the attempt ends.
ALTER TABLE attempts ADD COLUMN asset_id INTEGER;
ALTER TABLE attempts ADD COLUMN lease_lo INTEGER;
ALTER TABLE attempts ADD COLUMN lease_hi INTEGER;
ALTER TABLE attempts ADD COLUMN lease TEXT;
-- The asset of the attempts recorded before (the events say it: replayed,
-- they give it too).
UPDATE attempts SET asset_id = (SELECT r.asset_id FROM runs r WHERE r.id = attempts.run_id);

-- +goose Down
ALTER TABLE attempts DROP COLUMN lease;
ALTER TABLE attempts DROP COLUMN lease_hi;
ALTER TABLE attempts DROP COLUMN lease_lo;
ALTER TABLE attempts DROP COLUMN asset_id;
