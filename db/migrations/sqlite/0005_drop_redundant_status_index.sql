-- +goose Up
-- partition_status_staleness (0004) begins with (asset_id, idx), so it serves
-- every range and index lookup partition_status_idx served; dropping the
-- narrower index saves one B-tree write per status change.
DROP INDEX partition_status_idx;

-- +goose Down
CREATE INDEX partition_status_idx ON partition_status (asset_id, idx);
