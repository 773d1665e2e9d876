-- +goose Up
-- Instances per attempt as index ranges: a partition that an engine attempt
-- materialized without metadata or error (the common case) gets no row of
-- its own. Its attempt records, once per run of consecutive partition
-- indexes (within one block of 1,024 indexes), one instance_ranges row; the
-- partitions are the status rows of the asset with an index in [lo, hi]
-- (every one of them has a row, written with the attempt's result, at that
-- index: a re-index turns the asset's ranges into rows first), and their
-- instance ids are derived from the attempt (tessera_instance_id, the
-- engine's AttemptInstanceIDs, registered on every connection). Every
-- other instance is a row of instance_rows, the former table.
--
-- partition_instances is now a view of both, with the former table's
-- columns: readers see every instance as a row, as before.
ALTER TABLE partition_instances RENAME TO instance_rows;
-- Instances still open (recorded in progress by versions before migration
-- 11): an attempt that ends one completes its row instead of a range.
CREATE INDEX instance_rows_open ON instance_rows (asset_id) WHERE status = 'in_progress';

CREATE TABLE instance_ranges (
    asset_id     INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    block        INTEGER NOT NULL, -- lo >> 10 (and hi >> 10)
    lo           INTEGER NOT NULL,
    hi           INTEGER NOT NULL,
    run_id       TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    asset_key    TEXT NOT NULL,    -- what the ids are derived from
    code_version TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    PRIMARY KEY (asset_id, block, lo, run_id, attempt)
) WITHOUT ROWID;
-- No index by run: every reader knows the asset and the partitions, and
-- finds the ranges by block through the partitions' status rows (an index
-- by run id, in random order, cost the writer a page per attempt).

-- An attempt running while its asset is re-indexed knows its partitions by
-- their former indexes: it records its instances as rows.
ALTER TABLE attempts ADD COLUMN reindexed INTEGER NOT NULL DEFAULT 0;

CREATE VIEW instance_ranges_expanded AS
    SELECT tessera_instance_id(r.run_id, r.attempt, r.asset_key, ps.partition_key) AS id, r.asset_id AS asset_id,
        ps.partition_key AS partition_key, r.run_id AS run_id, 'materialized' AS status, r.code_version AS code_version,
        NULL AS metadata, NULL AS error, 'backfill' AS source, r.started_at AS started_at, r.finished_at AS finished_at,
        NULL AS supersedes_id, r.started_at AS created_at
    FROM instance_ranges r JOIN partition_status ps
        ON ps.asset_id = r.asset_id AND ps.idx >= r.lo AND ps.idx <= r.hi AND (ps.idx >> 10) = r.block;

CREATE VIEW partition_instances AS
    SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at
    FROM instance_rows
    UNION ALL
    SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at
    FROM instance_ranges_expanded;

-- +goose StatementBegin
CREATE TRIGGER partition_instances_insert INSTEAD OF INSERT ON partition_instances
BEGIN
    INSERT INTO instance_rows (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at)
    VALUES (NEW.id, NEW.asset_id, NEW.partition_key, NEW.run_id, NEW.status, COALESCE(NEW.code_version, ''), NEW.metadata, NEW.error,
        COALESCE(NEW.source, 'api'), NEW.started_at, NEW.finished_at, NEW.supersedes_id, NEW.created_at);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER partition_instances_insert;
DROP VIEW partition_instances;
INSERT INTO instance_rows (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at)
    SELECT id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at
    FROM instance_ranges_expanded;
DROP VIEW instance_ranges_expanded;
ALTER TABLE attempts DROP COLUMN reindexed;
DROP TABLE instance_ranges;
DROP INDEX instance_rows_open;
ALTER TABLE instance_rows RENAME TO partition_instances;
