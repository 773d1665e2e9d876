package db

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// moveSource is a SQLite database at this binary's schema, with rows
// written by rows (raw statements: the values a move must carry exactly).
func moveSource(t *testing.T, rows ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range rows {
		if _, err := s.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

func pgConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pgRowTotal is the rows of every table of the target but goose's.
func pgRowTotal(t *testing.T, c *pgx.Conn) int64 {
	t.Helper()
	ctx := context.Background()
	tables, err := pgTables(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, tb := range tables {
		if tb == gooseTable {
			continue
		}
		var n int64
		if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{tb}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

const moveAsset = `INSERT INTO assets (id, key, scheme_kind, scheme_description, scheme_signature, definition, created_at, updated_at)
	VALUES (7, 'a.ünïcode', 'daily', 'daily', 'sig', '{"k": "v"}', 4611686018427387904, -1)`

// TestMoveCarriesValuesExactly: 64-bit integers, negative ones, blobs with
// NUL bytes, text in any script with quotes and newlines arrive as they
// were; the identity sequences continue past the largest id and past
// SQLite's AUTOINCREMENT counter (an id of a deleted event is not given
// again).
func TestMoveCarriesValuesExactly(t *testing.T) {
	t.Parallel()
	src := moveSource(t, moveAsset,
		`INSERT INTO staleness_blocks (asset_id, block, gen, facts) VALUES (7, 3, -5, X'00FF0010')`,
		`INSERT INTO settings (name, value) VALUES ('k', 'é…'||char(10)||'"quoted" ''single''')`,
		`INSERT INTO events (id, type, subject, actor, payload, at) VALUES (41, 't', 's', 'a', '{}', 1)`,
		`INSERT INTO events (id, type, subject, actor, payload, at) VALUES (1000, 't', 's', 'a', '{}', 2)`,
		`DELETE FROM events WHERE id = 1000`)
	url := pgtest.URL(t)
	loc, err := ParseLocation(url)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := MoveToPostgres(context.Background(), src, loc, MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version < 31 || len(rep.Tables) < 30 || rep.Sequences < 5 {
		t.Fatalf("report %+v", rep)
	}
	c := pgConnect(t, url)
	ctx := context.Background()
	var created, updated int64
	var key, def string
	if err := c.QueryRow(ctx, `SELECT key, definition, created_at, updated_at FROM assets WHERE id = 7`).Scan(&key, &def, &created, &updated); err != nil {
		t.Fatal(err)
	}
	if key != "a.ünïcode" || def != `{"k": "v"}` || created != 1<<62 || updated != -1 {
		t.Errorf("asset arrived as %q %q %d %d", key, def, created, updated)
	}
	var facts []byte
	var gen int64
	if err := c.QueryRow(ctx, `SELECT gen, facts FROM staleness_blocks WHERE asset_id = 7 AND block = 3`).Scan(&gen, &facts); err != nil {
		t.Fatal(err)
	}
	if gen != -5 || !bytes.Equal(facts, []byte{0, 0xff, 0, 0x10}) {
		t.Errorf("blob arrived as %d %x", gen, facts)
	}
	var v string
	if err := c.QueryRow(ctx, `SELECT value FROM settings WHERE name = 'k'`).Scan(&v); err != nil || v != "é…\n\"quoted\" 'single'" {
		t.Errorf("text arrived as %q (%v)", v, err)
	}
	var next, nextAsset int64
	if err := c.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('events', 'id')), nextval(pg_get_serial_sequence('assets', 'id'))`).Scan(&next, &nextAsset); err != nil {
		t.Fatal(err)
	}
	if next != 1001 || nextAsset != 8 {
		t.Errorf("next ids: event %d (want 1001, past SQLite's counter), asset %d (want 8)", next, nextAsset)
	}
}

// TestMoveFailureLeavesNothing: a row PostgreSQL refuses (a NUL character
// in a text, which SQLite keeps) fails the move naming its table, after
// other tables were copied in the same transaction: the target holds no
// row. Once the row is fixed, the same move into the same database works.
func TestMoveFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	src := moveSource(t, moveAsset,
		`INSERT INTO users (id, name, role, password_hash, created_at, updated_at) VALUES (1, 'ops', 'operator', 'h', 1, 1)`,
		`INSERT INTO workers (owner, started_at, heartbeat_at) VALUES ('bad'||char(0)||'owner', 1, 1)`)
	url := pgtest.URL(t)
	loc, _ := ParseLocation(url)
	var copied []string
	_, err := MoveToPostgres(context.Background(), src, loc, MoveOptions{Progress: func(m MovedTable) { copied = append(copied, m.Name) }})
	var me *MoveError
	if !errors.As(err, &me) || me.Problem != MoveCopyFailed || me.Table != "workers" {
		t.Fatalf("err %v, want the copy of workers failing", err)
	}
	if !slices.Contains(copied, "users") || !slices.Contains(copied, "assets") {
		t.Fatalf("copied %v before failing: the test wants tables copied before the failure", copied)
	}
	c := pgConnect(t, url)
	if n := pgRowTotal(t, c); n != 0 {
		t.Fatalf("the failed move left %d rows", n)
	}

	s, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	s.w.Exec(`UPDATE workers SET owner = 'good-owner'`)
	s.Close()
	if _, err := MoveToPostgres(context.Background(), src, loc, MoveOptions{}); err != nil {
		t.Fatalf("the move again: %v", err)
	}
	if n := pgRowTotal(t, c); n != 3 {
		t.Fatalf("%d rows after the move, want 3", n)
	}
}

// TestMoveRefusesSchemasThatDiffer: a table only one database has, or a
// column only one table has, is refused by name before any row is
// copied: the list of tables is the schemas', and a difference is never a
// silent loss.
func TestMoveRefusesSchemasThatDiffer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	src := moveSource(t, moveAsset)
	url := pgtest.URL(t)
	loc, _ := ParseLocation(url)
	if err := migratePostgres(url); err != nil {
		t.Fatal(err)
	}
	c := pgConnect(t, url)
	if _, err := c.Exec(ctx, `CREATE TABLE stray (x BIGINT)`); err != nil {
		t.Fatal(err)
	}
	_, err := MoveToPostgres(ctx, src, loc, MoveOptions{})
	var me *MoveError
	if !errors.As(err, &me) || me.Problem != MoveSchemaMismatch || !slices.Equal(me.OnlyPostgres, []string{"stray"}) || len(me.OnlySQLite) != 0 {
		t.Fatalf("err %v, want the table stray named", err)
	}
	if n := pgRowTotal(t, c); n != 0 {
		t.Fatalf("a refused move copied %d rows", n)
	}

	src2 := moveSource(t, moveAsset, `ALTER TABLE settings ADD COLUMN extra TEXT`)
	url2 := pgtest.URL(t)
	loc2, _ := ParseLocation(url2)
	_, err = MoveToPostgres(ctx, src2, loc2, MoveOptions{})
	if !errors.As(err, &me) || me.Problem != MoveSchemaMismatch || me.Table != "settings" || !slices.Equal(me.OnlySQLite, []string{"extra"}) {
		t.Fatalf("err %v, want the column settings.extra named", err)
	}
	if n := pgRowTotal(t, pgConnect(t, url2)); n != 0 {
		t.Fatalf("a refused move copied %d rows", n)
	}
}

// TestDependencyOrder: parents before children, otherwise by name; a
// cycle is an error.
func TestDependencyOrder(t *testing.T) {
	got, err := dependencyOrder([]string{"a_child", "b", "z_parent"}, map[string][]string{"a_child": {"z_parent", "b"}, "b": {"b"}})
	if err != nil || !slices.Equal(got, []string{"b", "z_parent", "a_child"}) {
		t.Fatalf("order %v %v", got, err)
	}
	if _, err := dependencyOrder([]string{"x", "y"}, map[string][]string{"x": {"y"}, "y": {"x"}}); err == nil {
		t.Fatal("a cycle was ordered")
	}
}
