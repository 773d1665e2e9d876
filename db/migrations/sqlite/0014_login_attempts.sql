-- +goose Up
-- Sign-in limits in the database instead of each process's memory: an
-- attempt is reserved (pending = 1) before its password is checked, so that
-- N concurrent tries count N, and `tessera user unlock` (another process)
-- can lift an account's lock. A row counts against its account and its
-- address for the limit's window; rows older than that are pruned.
CREATE TABLE login_failures (
    id      INTEGER PRIMARY KEY,
    account TEXT NOT NULL,            -- the name asked for, lower-cased (may not exist)
    addr    TEXT NOT NULL,            -- the client address
    at      INTEGER NOT NULL,         -- unix ms
    pending INTEGER NOT NULL DEFAULT 1 -- 1 while its password check runs
);
CREATE INDEX login_failures_account ON login_failures (account, at);
CREATE INDEX login_failures_addr ON login_failures (addr, at);
CREATE INDEX login_failures_at ON login_failures (at);

-- Addresses that signed in to an account: an account locked by failures
-- from elsewhere stays open to them (the lock keeps guessers out without
-- locking the owner out).
CREATE TABLE login_trust (
    account TEXT NOT NULL,
    addr    TEXT NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (account, addr)
);

-- +goose Down
DROP TABLE login_trust;
DROP TABLE login_failures;
