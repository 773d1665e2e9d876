package db_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestSchemaNewerThanBinaryIsRefused: a database that a newer binary
// migrated (its goose version past this binary's newest migration) is
// refused on both dialects with both versions named, and nothing is
// written to it.
func TestSchemaNewerThanBinaryIsRefused(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		store := teststore.OpenOn(t, d)
		newer, binary, err := store.MarkSchemaNewerForTest(7)
		if err != nil {
			t.Fatal(err)
		}
		var rowsBefore, usersBefore int
		if err := store.RawReader().Get(&rowsBefore, `SELECT COUNT(*) FROM goose_db_version`); err != nil {
			t.Fatal(err)
		}
		if err := store.RawReader().Get(&usersBefore, `SELECT COUNT(*) FROM users`); err != nil {
			t.Fatal(err)
		}
		loc := store.Location().Path
		if d == db.Postgres {
			loc = store.Location().URL
		}
		again, err := db.Open(loc)
		if err == nil {
			again.Close()
			t.Fatal("a database of a newer schema was opened")
		}
		var tooNew *db.SchemaTooNewError
		if !errors.As(err, &tooNew) || tooNew.Database != newer || tooNew.Binary != binary {
			t.Fatalf("error %v, want a SchemaTooNewError of %d and %d", err, newer, binary)
		}
		for _, v := range []int64{newer, binary} {
			if !strings.Contains(err.Error(), strconv.FormatInt(v, 10)) {
				t.Fatalf("message %q does not name version %d", err, v)
			}
		}
		var rowsAfter, usersAfter int
		if err := store.RawReader().Get(&rowsAfter, `SELECT COUNT(*) FROM goose_db_version`); err != nil {
			t.Fatal(err)
		}
		if err := store.RawReader().Get(&usersAfter, `SELECT COUNT(*) FROM users`); err != nil {
			t.Fatal(err)
		}
		if rowsAfter != rowsBefore || usersAfter != usersBefore {
			t.Fatalf("written: version rows %d → %d, users %d → %d", rowsBefore, rowsAfter, usersBefore, usersAfter)
		}
	})
}
