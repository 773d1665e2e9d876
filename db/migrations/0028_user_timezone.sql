-- +goose Up
-- The zone a user reads times in (an IANA name such as Europe/Berlin);
-- '' = the browser's zone (or UTC when the browser has not said).
ALTER TABLE users ADD COLUMN timezone TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE users DROP COLUMN timezone;
