-- +goose Up
-- PostgreSQL drops the foreign keys of its hot tables to assets in 0034
-- (see migrations/postgres). SQLite keeps them: its check is an index probe
-- in the same process, and dropping a key would rebuild each table. The
-- version exists here so that both dialects share their version numbers
-- (tessera migrate --from … --to … compares them).
SELECT 1;

-- +goose Down
SELECT 1;
