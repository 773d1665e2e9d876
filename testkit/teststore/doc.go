// Package teststore opens a real store for a test: a SQLite file in the
// test's temporary directory, or a fresh database of a throwaway
// PostgreSQL cluster (pgtest). It imports only catalog, db and pgtest, so
// the tests inside db, jobs and demo (which testkit imports) use it too.
package teststore
