-- +goose Up
-- A status row stored the ids of its last materialization up to three times:
-- as the last materialization, as the last attempt (when that attempt
-- materialized, it is the last materialization) and as the canonical
-- instance (always the last materialized one). They are stored once now, and
-- readers restore the others (db.PartitionStatus.fill): about 90 bytes less
-- to write per partition built, and a smaller table.
UPDATE partition_status SET last_attempt_instance_id = NULL, last_attempt_run_id = NULL
    WHERE last_attempt_status = 'materialized'
      AND last_attempt_instance_id IS last_mat_instance_id AND last_attempt_run_id IS last_mat_run_id;
ALTER TABLE partition_status DROP COLUMN canonical_instance_id;

-- +goose Down
ALTER TABLE partition_status ADD COLUMN canonical_instance_id TEXT;
UPDATE partition_status SET canonical_instance_id = last_mat_instance_id;
UPDATE partition_status SET last_attempt_instance_id = last_mat_instance_id, last_attempt_run_id = last_mat_run_id
    WHERE last_attempt_status = 'materialized' AND last_attempt_instance_id IS NULL;
