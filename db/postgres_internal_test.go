package db

import "testing"

// TestPgRebind: ? placeholders become $1, $2, … in order; a ? inside a
// string literal, a quoted identifier, a comment or a dollar-quoted string
// stays, and so do $n placeholders already there.
func TestPgRebind(t *testing.T) {
	cases := map[string]string{
		`SELECT 1`: `SELECT 1`,
		`SELECT * FROM t WHERE a = ? AND b IN (?,?)`: `SELECT * FROM t WHERE a = $1 AND b IN ($2,$3)`,
		`SELECT '?', 'it''s ?', ? FROM "we?ird"`:     `SELECT '?', 'it''s ?', $1 FROM "we?ird"`,
		"SELECT ? -- why?\n, ?":                      "SELECT $1 -- why?\n, $2",
		`SELECT /* ? */ ?`:                           `SELECT /* ? */ $1`,
		`SELECT $fn$ ? $fn$, ?, $$?$$`:               `SELECT $fn$ ? $fn$, $1, $$?$$`,
		`SELECT $1, $2`:                              `SELECT $1, $2`,
		`VALUES (?1, ?2, ?1, ?10)`:                   `VALUES ($1, $2, $1, $10)`,
		`SELECT 'unterminated ?`:                     `SELECT 'unterminated ?`,
	}
	for in, want := range cases {
		if got := pgRebind(in); got != want {
			t.Errorf("pgRebind(%q) = %q, want %q", in, got, want)
		}
	}
}
