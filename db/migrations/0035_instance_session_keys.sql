-- +goose Up
-- Several instances on one PostgreSQL database (issue 23): every instance
-- must read the session cookies the others sign. instance_session_keys
-- holds, for each instance (workers.owner) serving the database, checks of
-- its session keys, never the keys: the hex HMAC-SHA256 of a fixed label
-- under its signing (first) key, and under each of its keys in order
-- (comma-separated), recorded at its start (Unix ms). An instance whose
-- keys are incompatible with those of a live instance refuses to start
-- and records nothing. SQLite (one instance) never writes it.
CREATE TABLE instance_session_keys (
    owner   TEXT PRIMARY KEY,
    signing TEXT NOT NULL,
    keys    TEXT NOT NULL,
    since   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE instance_session_keys;
