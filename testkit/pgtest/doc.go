// Package pgtest starts a throwaway PostgreSQL cluster for the tests of a
// package (Debian's postgresql package: initdb and pg_ctl, in a temporary
// directory, on a free port of 127.0.0.1, fsync off) and gives each test
// a fresh database of it (URL), so that tests on PostgreSQL run in
// parallel like those on SQLite files.
//
// The cluster starts at the first URL of the package's tests and stops
// when the package's TestMain returns through Main. A test that asks for
// a database fails (never skips) when the cluster cannot start: CI
// installs PostgreSQL (.ci/run).
//
// initdb refuses to run as root: as root, the cluster runs as the
// postgres user (su postgres -c …) in a directory given to it. The
// binaries are those of TESSERA_PG_BIN, or else of the newest
// /usr/lib/postgresql/*/bin.
//
// It imports nothing of Tessera's, so the tests inside db use it too.
package pgtest
