-- +goose Up
-- PostgreSQL compresses the events' payloads with lz4 from 0037 (see
-- migrations/postgres); SQLite stores them as they are. The version exists
-- here so that both dialects share their version numbers.
SELECT 1;

-- +goose Down
SELECT 1;
