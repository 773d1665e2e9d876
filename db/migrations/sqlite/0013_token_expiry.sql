-- +goose Up
-- An API token may expire (tessera token create --expires 90d): from then on
-- it is refused with 401 "token expired". NULL: it never expires, as every
-- token made before.
ALTER TABLE api_tokens ADD COLUMN expires_at INTEGER;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN expires_at;
