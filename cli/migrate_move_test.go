package cli_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to count the target's rows
	_ "github.com/mattn/go-sqlite3"    // the "sqlite3" driver, to count the source's rows

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// moveWorkspace has what a move must carry: backfills that succeed and
// fail, partitions whose instances are index ranges (a command executor
// reporting nothing), a schedule (a tick launched by hand) and a push
// sensor.
var moveWorkspace = clientWorkspace + testkit.Asset("t.plain", "{daily: {start: 2025-01-01}}", `executor: {command: ["true"]}`) + `schedules:
  nightly:
    cron: "0 3 * * *"
    assets: [t.daily]
sensors:
  arrivals:
    assets: [t.one]
`

// apiJSON is GET path of the server at url, decoded, failing on a status
// other than 200.
func apiJSON(t *testing.T, base, tok, path string) map[string]any {
	t.Helper()
	resp, body := testkit.APIRequest(t, base, tok, "GET", path, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, body)
	}
	return body.(map[string]any)
}

// waitIdle waits until no backfill of the server at base is queued or
// running.
func waitIdle(t *testing.T, base, tok string) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, "every backfill to finish", func() bool {
		for _, b := range apiJSON(t, base, tok, "/api/v1/backfills?limit=500")["backfills"].([]any) {
			if s := b.(map[string]any)["state"]; s != "SUCCEEDED" && s != "FAILED" && s != "CANCELED" {
				return false
			}
		}
		return true
	})
}

// tableCounts is every table's row count (goose's and the engine's own
// aside), through driver on dsn.
func tableCounts(t *testing.T, driver, dsn, listTables string) map[string]int64 {
	t.Helper()
	d, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.Query(listTables)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	out := map[string]int64{}
	for _, n := range names {
		if n == "goose_db_version" {
			continue
		}
		var c int64
		if err := d.QueryRow(`SELECT COUNT(*) FROM "` + n + `"`).Scan(&c); err != nil {
			t.Fatalf("count %s: %v", n, err)
		}
		out[n] = c
	}
	return out
}

const (
	sqliteTablesQ = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	pgTablesQ     = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`
)

// binaryVersion is the schema version of this tessera's migrations.
func binaryVersion(t *testing.T) int64 {
	t.Helper()
	v, err := db.BinaryVersion()
	if err != nil || v < 31 {
		t.Fatalf("binary version %d: %v", v, err)
	}
	return v
}

func pgScalar(t *testing.T, dsn, q string) int64 {
	t.Helper()
	d, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int64
	if err := d.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestMigrateMovesSQLiteToPostgres: a SQLite database a real server used
// (accounts, tokens, a browser session, backfills that succeeded and
// failed with their runs, attempts, statuses and events, a schedule's
// tick, a sensor's event) is moved with `tessera migrate --from --to`;
// every table arrives with all its rows, and the real binary serving the
// PostgreSQL database shows the same backfills and partition counts,
// takes the same API token, the same browser session (with the SQLite
// server's session key) and the same password, and creates new rows after
// the moved ids.
func TestMigrateMovesSQLiteToPostgres(t *testing.T) {
	t.Parallel() // every command below names its server and token (--server, --token), or its --db
	s := startServerWith(t, moveWorkspace)

	// History, through the API of the real server.
	if code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-02-01", "--end", "2025-02-28", "--chunk-size", "4", "--title", "february", "--wait"); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "backfill", "create", "t.flaky", "--partitions", "2025-03-01,2025-03-02", "--wait"); code != 1 || !strings.Contains(out, "FAILED") {
		t.Fatalf("failing create: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "backfill", "create", "t.plain", "--start", "2025-01-01", "--end", "2025-01-10", "--chunk-size", "5", "--wait"); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("create of t.plain: %d %q %q", code, out, errOut)
	}
	// Half of t.plain again: its status range becomes rows, and the
	// instances of the second build are an instance range.
	if code, out, errOut := s.cli(t, "backfill", "create", "t.plain", "--start", "2025-01-01", "--end", "2025-01-05", "--chunk-size", "5", "--wait"); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("second create of t.plain: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "schedule", "trigger", "nightly"); code != 0 || !strings.Contains(out, "launched") {
		t.Fatalf("trigger: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "sensor", "send", "arrivals", "--message-id", "m-1", "--partition", "only"); code != 0 || !strings.Contains(out, "launched") {
		t.Fatalf("sensor send: %d %q %q", code, out, errOut)
	}
	waitIdle(t, s.URL, s.Token)
	browser := (&testkit.Env{URL: s.URL}).Login(t, "ops", "correct-horse-battery")
	backfills := apiJSON(t, s.URL, s.Token, "/api/v1/backfills?limit=500")["backfills"].([]any)
	assets := apiJSON(t, s.URL, s.Token, "/api/v1/assets")["assets"].([]any)
	if len(backfills) != 6 {
		t.Fatalf("seeded %d backfills, want 6", len(backfills))
	}
	histories := []string{"/api/v1/assets/t.plain/partitions/2025-01-03/history", "/api/v1/assets/t.daily/partitions/2025-02-03/history",
		"/api/v1/assets/t.flaky/partitions/2025-03-01/history"}
	history := map[string]map[string]any{}
	for _, h := range histories {
		history[h] = apiJSON(t, s.URL, s.Token, h)
		if inst, _ := history[h]["instances"].([]any); len(inst) == 0 {
			t.Fatalf("%s: no instance before the move: %v", h, history[h])
		}
	}

	// A database a server still runs on is refused, nothing written.
	target := pgtest.URL(t)
	code, out, errOut := run(t, "migrate", "--from", s.DB, "--to", target)
	if code != 2 || !strings.Contains(errOut, "is in use: a tessera serve on it heartbeated ") || !strings.Contains(errOut, "stop it first") {
		t.Fatalf("move of a database in use: %d %q %q", code, out, errOut)
	}
	if n := pgScalar(t, target, `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Fatalf("the refused move wrote %d tables", n)
	}

	// Stop the server: the move reads a database no one writes.
	s.Proc.Signal(os.Interrupt)
	s.Proc.Wait()

	code, out, errOut = run(t, "migrate", "--from", s.DB, "--to", target)
	if code != 0 {
		t.Fatalf("move: exit %d %q %q", code, out, errOut)
	}
	for _, want := range []string{"copied users ", "copied partition_status ", fmt.Sprintf("(schema version %d)", binaryVersion(t)), "TESSERA_SESSION_KEYS=$(cat " + s.DB + ".session-key)"} {
		if !strings.Contains(out, want) {
			t.Errorf("move's output lacks %q:\n%s", want, out)
		}
	}
	t.Log(out)
	if m := regexp.MustCompile(`moved (\d+) rows in (\d+) tables`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("move's summary: %q", out)
	}

	// Every table, all its rows.
	src := tableCounts(t, "sqlite3", "file:"+s.DB+"?mode=ro", sqliteTablesQ)
	dst := tableCounts(t, "pgx", target, pgTablesQ)
	if !reflect.DeepEqual(src, dst) {
		t.Errorf("row counts differ:\nSQLite     %v\nPostgreSQL %v", src, dst)
	}
	for _, table := range []string{"users", "api_tokens", "sessions", "assets", "backfills", "backfill_segments", "runs", "attempts",
		"partition_status", "status_ranges", "instance_rows", "instance_ranges", "events", "schedule_state", "schedule_ticks", "sensor_state", "sensor_events", "backfill_failures"} {
		if src[table] == 0 {
			t.Errorf("the seed left %s empty: the test proves nothing about it", table)
		}
	}
	eventsBefore := pgScalar(t, target, `SELECT MAX(id) FROM events`)

	// The real binary on PostgreSQL, with the SQLite server's session key.
	key, err := os.ReadFile(s.DB + ".session-key")
	if err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	_, logPath := startServe(t, []string{"TESSERA_SESSION_KEYS=" + strings.TrimSpace(string(key))}, "--addr", addr, "--db", target, "--workspace", s.WS)
	pg := server{URL: "http://" + addr, Token: s.Token, AdminToken: s.AdminToken, DB: target, WS: s.WS}
	waitReady(t, http.DefaultClient, pg.URL, logPath)

	// The same backfills (every field the API shows) and partition counts.
	if got := apiJSON(t, pg.URL, pg.Token, "/api/v1/backfills?limit=500")["backfills"].([]any); !reflect.DeepEqual(got, backfills) {
		a, _ := json.MarshalIndent(backfills, "", " ")
		b, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("backfills differ after the move:\nSQLite %s\nPostgreSQL %s", a, b)
	}
	if got := apiJSON(t, pg.URL, pg.Token, "/api/v1/assets")["assets"].([]any); !reflect.DeepEqual(got, assets) {
		t.Errorf("assets differ after the move:\nSQLite %v\nPostgreSQL %v", assets, got)
	}
	// Each partition's history: its instances (ranges expanded by
	// PostgreSQL's tessera_instance_id as by SQLite's), attempts, errors.
	for _, h := range histories {
		if got := apiJSON(t, pg.URL, pg.Token, h); !reflect.DeepEqual(got, history[h]) {
			t.Errorf("%s differs after the move:\nSQLite     %v\nPostgreSQL %v", h, history[h], got)
		}
	}
	// The browser's session cookie of the SQLite server (same host, the
	// jar sends it to any port) and the password.
	resp, err := browser.Get(pg.URL + "/api/v1/backfills")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the session signed in on SQLite: %d on PostgreSQL, want 200", resp.StatusCode)
	}
	(&testkit.Env{URL: pg.URL}).Login(t, "ops", "correct-horse-battery")

	// New rows continue the ids: a backfill (events, runs), an account
	// and its token (users, api_tokens).
	code, out, errOut = pg.cli(t, "backfill", "create", "t.daily", "--start", "2025-04-01", "--end", "2025-04-10", "--chunk-size", "5", "--title", "april", "--wait")
	if code != 0 || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "10/10 done") {
		t.Fatalf("a new backfill on PostgreSQL: %d %q %q", code, out, errOut)
	}
	if after := pgScalar(t, target, `SELECT MIN(id) FROM events WHERE id > `+fmt.Sprint(eventsBefore)); after != eventsBefore+1 {
		t.Errorf("the first event written on PostgreSQL has id %d, want %d (right after the moved ones)", after, eventsBefore+1)
	}
	pw := writeFile(t, "pw", "another-horse-battery\n")
	if code, _, errOut := run(t, "user", "add", "carol", "--role", "viewer", "--password-file", pw, "--db", target); code != 0 {
		t.Fatalf("user add on the moved database: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "token", "create", "--user", "carol", "--name", "after-move", "--db", target); code != 0 {
		t.Fatalf("token create on the moved database: %d %q", code, errOut)
	}
	if got, want := pgScalar(t, target, `SELECT id FROM users WHERE name = 'carol'`), src["users"]+1; got != want {
		t.Errorf("carol's id %d, want %d", got, want)
	}
	got := apiJSON(t, pg.URL, pg.Token, "/api/v1/backfills?limit=500")["backfills"].([]any)
	if len(got) != 7 {
		t.Fatalf("%d backfills after a new one, want 7", len(got))
	}
}

// fileSum is the SHA-256 of the file at path ("" when it does not exist).
func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func pgExec(t *testing.T, dsn, q string) {
	t.Helper()
	d, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestMigrateMoveRefusals: each mistake of a move is refused with what is
// wrong and how to fix it, and writes nothing: neither the SQLite file nor
// the PostgreSQL database changes.
func TestMigrateMoveRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := dir + "/src.db"
	pw := writeFile(t, "pw", "correct-horse-battery\n")
	if code, _, errOut := run(t, "migrate", "--db", src); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := run(t, "user", "add", "ops", "--role", "operator", "--password-file", pw, "--db", src); code != 0 {
		t.Fatal(errOut)
	}
	// A database of a newer tessera (schema version 99).
	newer := dir + "/newer.db"
	if b, err := os.ReadFile(src); err != nil || os.WriteFile(newer, b, 0o644) != nil {
		t.Fatal(err)
	}
	d, err := sql.Open("sqlite3", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	// A SQLite database that is not Tessera's, and a file that is no database.
	foreign := dir + "/foreign.db"
	if d, err = sql.Open("sqlite3", foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	text := writeFile(t, "notes.txt", "not a database\n")

	empty := pgtest.URL(t)
	// A PostgreSQL database Tessera already uses (one account).
	used := pgtest.URL(t)
	if code, _, errOut := run(t, "user", "add", "ops", "--role", "operator", "--password-file", pw, "--db", used); code != 0 {
		t.Fatal(errOut)
	}
	// A PostgreSQL database of a newer tessera, without rows.
	ahead := pgtest.URL(t)
	if code, _, errOut := run(t, "migrate", "--db", ahead); code != 0 {
		t.Fatal(errOut)
	}
	pgExec(t, ahead, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`)

	usedRows := tableCounts(t, "pgx", used, pgTablesQ)
	sums := map[string]string{}
	for _, f := range []string{src, newer, foreign, text} {
		sums[f] = fileSum(t, f)
	}
	otherDB := dir + "/other.db"
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--from", src, "--to", otherDB}, 2, []string{"--to must be a postgres:// URL", "not the file", "sqlite3's .backup"}},
		{[]string{"--from", src, "--to", "mysql://u@localhost/tessera"}, 2, []string{"--to must be a postgres:// URL", `does not speak "mysql://"`}},
		{[]string{"--from", src, "--to", "postgres://u@127.0.0.1:notaport/tessera"}, 2, []string{"--to: malformed PostgreSQL connection string", "the form is postgres://"}},
		{[]string{"--from", src, "--to", ""}, 2, []string{"--to is empty"}},
		{[]string{"--from", "", "--to", empty}, 2, []string{"--from is empty"}},
		{[]string{"--from", empty, "--to", empty}, 2, []string{"--from must be a SQLite database file", "not a PostgreSQL URL"}},
		{[]string{"--from", dir + "/missing.db", "--to", empty}, 2, []string{"missing.db: no such file", "tessera serve --db used"}},
		{[]string{"--from", text, "--to", empty}, 2, []string{"notes.txt is not a SQLite database file"}},
		{[]string{"--from", dir, "--to", empty}, 2, []string{"is not a SQLite database file"}},
		{[]string{"--from", foreign, "--to", empty}, 2, []string{"foreign.db is a SQLite database without Tessera's schema"}},
		{[]string{"--from", newer, "--to", empty}, 2, []string{fmt.Sprintf("newer.db has schema version 99, newer than this tessera's %d", binaryVersion(t)), "the tessera that wrote it"}},
		{[]string{"--from", src, "--to", used}, 2, []string{"already holds data (table ", "empty database"}},
		{[]string{"--from", src, "--to", ahead}, 3, []string{fmt.Sprintf("has schema version 99, newer than this tessera's %d", binaryVersion(t))}},
		{[]string{"--from", src, "--to", "postgres://postgres@127.0.0.1:1/tessera?sslmode=disable"}, 3, []string{"cannot reach PostgreSQL at postgres://postgres@127.0.0.1:1/tessera", "nothing was written"}},
		{[]string{"--from", src, "--to", "postgres://postgres:hunter2@127.0.0.1:1/tessera?sslmode=disable"}, 3, []string{"postgres://postgres:xxxxx@127.0.0.1:1/"}},
		{[]string{"--from", src, "--to", empty, "--db", src}, 2, []string{"--db cannot be combined with --from and --to"}},
	}
	for _, c := range cases {
		code, out, errOut := run(t, append([]string{"migrate"}, c.args...)...)
		if code != c.code || out != "" || strings.Contains(errOut, "hunter2") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", c.args, code, c.code, out, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, errOut, w)
			}
		}
	}

	// Nothing written anywhere.
	for f, sum := range sums {
		if got := fileSum(t, f); got != sum {
			t.Errorf("%s changed", f)
		}
	}
	if _, err := os.Stat(otherDB); err == nil {
		t.Errorf("--to of a file created it")
	}
	if n := pgScalar(t, empty, `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Errorf("the refusals left %d tables in the empty database", n)
	}
	if got := tableCounts(t, "pgx", used, pgTablesQ); !reflect.DeepEqual(got, usedRows) || got["users"] != 1 {
		t.Errorf("the database in use changed: %v, was %v", got, usedRows)
	}
	if n := pgScalar(t, ahead, `SELECT MAX(version_id) FROM goose_db_version`); n != 99 {
		t.Errorf("the newer database is at version %d", n)
	}

	// And the move into the empty database still works afterwards.
	if code, out, errOut := run(t, "migrate", "--from", src, "--to", empty); code != 0 || !strings.Contains(out, "moved ") {
		t.Fatalf("move after the refusals: %d %q %q", code, out, errOut)
	}
	if n := pgScalar(t, empty, `SELECT COUNT(*) FROM users WHERE name = 'ops'`); n != 1 {
		t.Fatalf("ops was not moved")
	}
	// Once moved, the database holds data: a second move is refused.
	if code, _, errOut := run(t, "migrate", "--from", src, "--to", empty); code != 2 || !strings.Contains(errOut, "already holds data") {
		t.Fatalf("a second move: %d %q", code, errOut)
	}
}
