-- +goose Up
-- Several instances on one PostgreSQL database (issue 23).
--
-- live_logs: the output so far of a command attempt running on one
-- instance, written by it at most once a second while the output changes,
-- so that a run page served by another instance tails it too; the row goes
-- when the attempt's log is stored (attempt_logs). SQLite (one instance)
-- never writes it.
CREATE TABLE live_logs (
    run_id     TEXT PRIMARY KEY,
    attempt    BIGINT NOT NULL,
    owner      TEXT NOT NULL,
    log        TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- worker_workspaces: the workspace each instance (workers.owner) serves,
-- as a fingerprint (a hash of its assets' definitions) and the hash of each
-- asset's definition (a JSON object, asset name → hash), since when (Unix
-- ms). An instance whose workspace differs from one recorded earlier by a
-- live instance names the assets that differ and does not plan.
CREATE TABLE worker_workspaces (
    owner       TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    assets      TEXT NOT NULL,
    since       BIGINT NOT NULL
);

-- +goose Down
DROP TABLE worker_workspaces;
DROP TABLE live_logs;
