package teststore

import (
	"fmt"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// Fill makes the store's database full for its writer connection:
// max_page_count (a per-connection pragma; the writer has one connection) at
// the current size, so that any write that needs a new page fails with
// SQLITE_FULL, as on a full disk. It returns the function that frees space.
func Fill(t testing.TB, s *db.Store) (free func()) {
	t.Helper()
	var pages int64
	if err := s.RawWriter().Get(&pages, `PRAGMA page_count`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RawWriter().Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := s.RawWriter().Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
			t.Fatal(err)
		}
	}
}
