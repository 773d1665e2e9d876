package db

import (
	"context"
	"fmt"
)

// FillForTest makes the store's database full for its writer connection,
// as a full disk does: max_page_count (a per-connection pragma; the writer
// has one connection) at its current size (compacted first when vacuum),
// so that any write that needs a new page fails with SQLITE_FULL. free
// lifts the cap. A failure goes to fatal (a test's t.Fatal). For the tests
// of what the store, the engine and the pages do when the disk is full
// (db/write_health_test.go, handlers/store_faults_test.go); nothing else
// may call it.
func (s *Store) FillForTest(vacuum bool, fatal func(...any)) (free func()) {
	w := s.writer(context.Background())
	if vacuum {
		if _, err := w.Exec(`VACUUM`); err != nil {
			fatal(err)
		}
	}
	var pages int64
	if err := w.Get(&pages, `PRAGMA page_count`); err != nil {
		fatal(err)
	}
	if _, err := w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		fatal(err)
	}
	return func() {
		if _, err := w.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
			fatal(err)
		}
	}
}
