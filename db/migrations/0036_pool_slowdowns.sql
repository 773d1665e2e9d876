-- +goose Up
-- pool_slowdowns: until when (Unix ms) a pool starts no run because a
-- remote service its HTTP executor called asked to slow down (Retry-After,
-- rate-limit headers). Kept in the database so that every instance sharing
-- it holds the pool, not only the one that was told, and so that a restart
-- within the wait keeps holding it.
CREATE TABLE pool_slowdowns (
    pool  TEXT PRIMARY KEY,
    until BIGINT NOT NULL
);

-- +goose Down
DROP TABLE pool_slowdowns;
