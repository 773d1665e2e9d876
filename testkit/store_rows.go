package testkit

import "testing"

// Count is the number a COUNT query returns, read from the store's reader
// without the API; the test fails when it cannot be read.
func (e *Env) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.Store.RawReader().Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// AccountCounts counts what an account request could write: the users, the
// API tokens and the events (an audit entry each).
func (e *Env) AccountCounts(t testing.TB) (users, tokens, events int) {
	t.Helper()
	users, tokens, events, err := e.Store.AccountCountsForTest()
	if err != nil {
		t.Fatalf("count the accounts: %v", err)
	}
	return users, tokens, events
}

// Exec runs a statement on the store's writer behind the engine's back (a
// state a test sets up); the test fails on its error.
func (e *Env) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := e.Store.RawWriter().Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
