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

-- +goose Down
ALTER TABLE attempts DROP COLUMN lease;
ALTER TABLE attempts DROP COLUMN lease_hi;
ALTER TABLE attempts DROP COLUMN lease_lo;
ALTER TABLE attempts DROP COLUMN asset_id;
