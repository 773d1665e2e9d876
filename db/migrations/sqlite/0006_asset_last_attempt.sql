-- +goose Up
-- The status board's "failing" badge asks each asset for its most recent
-- attempt. Kept on the asset row in the same transaction as the status rows,
-- it replaces partition_status_last_attempt, an index every status change
-- had to rewrite (two B-tree writes per partition built).
ALTER TABLE assets ADD COLUMN last_attempt_at INTEGER;
ALTER TABLE assets ADD COLUMN last_attempt_status TEXT;
UPDATE assets SET
    last_attempt_at = (SELECT p.last_attempt_at FROM partition_status p WHERE p.asset_id = assets.id AND p.last_attempt_at IS NOT NULL
        ORDER BY p.last_attempt_at DESC, p.last_attempt_status = 'failed' DESC LIMIT 1),
    last_attempt_status = (SELECT p.last_attempt_status FROM partition_status p WHERE p.asset_id = assets.id AND p.last_attempt_at IS NOT NULL
        ORDER BY p.last_attempt_at DESC, p.last_attempt_status = 'failed' DESC LIMIT 1);
DROP INDEX partition_status_last_attempt;

-- +goose Down
CREATE INDEX partition_status_last_attempt ON partition_status (asset_id, last_attempt_at);
ALTER TABLE assets DROP COLUMN last_attempt_status;
ALTER TABLE assets DROP COLUMN last_attempt_at;
