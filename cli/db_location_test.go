package cli_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// inEmptyDir runs the test in an empty working directory and returns it
// (a refused --db must leave it empty: no SQLite file or folder created),
// with no client configuration (noConfig) and TESSERA_SESSION_KEYS set to
// sessionKeys.
func inEmptyDir(t *testing.T, sessionKeys string) string {
	dir := t.TempDir()
	t.Chdir(dir)
	noConfig(t)
	t.Setenv("TESSERA_SESSION_KEYS", sessionKeys)
	return dir
}

// assertEmpty fails when dir holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("a refused --db left %s in the working directory", e.Name())
	}
}

// dbCommands are the commands that open the store, with --db to append.
var dbCommands = [][]string{
	{"serve", "--addr", "127.0.0.1:0"},
	{"migrate"},
	{"user", "list"},
	{"token", "list"},
}

// wantDBRefused runs each of dbCommands with --db value and checks that it
// exits with code, that its error says each of wants, and that the error
// never shows the password s3cret.
func wantDBRefused(t *testing.T, value string, code int, wants ...string) {
	t.Helper()
	for _, cmd := range dbCommands {
		got, _, errOut := run(t, append(cmd, "--db", value)...)
		if got != code {
			t.Errorf("%v --db %q: exit %d, want %d (%q)", cmd, value, got, code, errOut)
		}
		for _, want := range wants {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v --db %q: error lacks %q: %q", cmd, value, want, errOut)
			}
		}
		if strings.Contains(errOut, "s3cret") {
			t.Errorf("%v --db %q: the error shows the password: %q", cmd, value, errOut)
		}
	}
}

func TestDBFlagRefusesURLsOfOtherSchemes(t *testing.T) {
	dir := inEmptyDir(t, "")
	for _, value := range []string{"mysql://u:pw@db.example:3306/tessera", "file:///var/lib/tessera.db", "sqlite://t.db"} {
		scheme := value[:strings.Index(value, "://")+3]
		wantDBRefused(t, value, 2, `"`+scheme+`"`, "SQLite database file", "postgres://", "postgresql://")
	}
	// The same value through TESSERA_DB.
	t.Setenv("TESSERA_DB", "mysql://u@h/d")
	if code, _, errOut := run(t, "migrate"); code != 2 || !strings.Contains(errOut, `"mysql://"`) {
		t.Errorf("TESSERA_DB=mysql://…: exit %d %q", code, errOut)
	}
	assertEmpty(t, dir)
}

func TestDBFlagRefusesMalformedPostgresURLs(t *testing.T) {
	dir := inEmptyDir(t, "0123456789abcdef0123")
	cases := map[string]string{
		"postgres://u:s3cret@db.example:notaport/tessera": "invalid port",
		"postgresql://u:s3cret@[::1/tessera":              "failed to parse as URL",
		"postgres://u:s3cret@h/d?sslmode=sometimes":       "sslmode is invalid",
		"postgres:tessera":                                `expected "postgres://"`,
		"POSTGRES://u:s3cret@h/d?connect_timeout=soon":    "invalid connect_timeout",
	}
	for value, reason := range cases {
		wantDBRefused(t, value, 2, "malformed PostgreSQL connection string", reason, "postgres://user:password@host:5432/dbname")
	}
	wantDBRefused(t, " ", 2, "--db is empty")
	assertEmpty(t, dir)
}

// TestPostgresUnreachableAtStart: a well-formed URL of a server that does
// not answer is exit 3 with a message naming the server (not the
// password), and creates no SQLite file or folder named postgres: (what
// --db postgres://… did before).
func TestPostgresUnreachableAtStart(t *testing.T) {
	dir := inEmptyDir(t, "0123456789abcdef0123")
	wantDBRefused(t, "postgres://tessera:s3cret@127.0.0.1:1/tessera?sslmode=disable", 3,
		"cannot reach PostgreSQL at postgres://tessera:xxxxx@127.0.0.1:1/tessera", "connection refused at 127.0.0.1:1", "check that the server runs")
	assertEmpty(t, dir)
}

// TestPostgresUnreachableSaysWhyOnce: without sslmode, pgx tries with TLS
// and then without, and its error repeats the reason for each try; the
// message says it once, in the user's terms, for each kind of failure:
// nothing listening, a host name that does not resolve, a server that
// accepts the connection and never answers.
func TestPostgresUnreachableSaysWhyOnce(t *testing.T) {
	dir := inEmptyDir(t, "")
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() { // accepts, and never answers
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	cases := []struct {
		url   string
		wants []string
	}{
		{"postgres://tessera:s3cret@127.0.0.1:1/tessera", []string{"connection refused at 127.0.0.1:1", "listens at this host and port", "fix them in --db"}},
		{"postgres://tessera:s3cret@no-such-host.invalid/tessera", []string{"cannot resolve the host name no-such-host.invalid", "fix it in --db"}},
		{"postgres://tessera:s3cret@" + silent.Addr().String() + "/tessera?connect_timeout=1", []string{"no answer from " + silent.Addr().String() + " after 1", "a firewall"}},
	}
	for _, c := range cases {
		code, _, errOut := run(t, "migrate", "--db", c.url)
		if code != 3 {
			t.Errorf("%s: exit %d, want 3: %q", c.url, code, errOut)
		}
		for _, want := range append(c.wants, "cannot reach PostgreSQL at postgres://tessera:xxxxx@") {
			if strings.Count(errOut, want) != 1 {
				t.Errorf("%s: error has %q %d times, want once: %q", c.url, want, strings.Count(errOut, want), errOut)
			}
		}
		for _, internal := range []string{"dial error", "failed to connect", "dial tcp", "s3cret"} {
			if strings.Contains(errOut, internal) {
				t.Errorf("%s: error shows pgx's %q: %q", c.url, internal, errOut)
			}
		}
		if strings.Contains(c.url, "connect_timeout=1") && !regexp.MustCompile(`after 1(\.[0-9])?s;`).MatchString(errOut) {
			t.Errorf("%s: error does not say it waited the URL's 1 s: %q", c.url, errOut)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%s: error takes more than one line: %q", c.url, errOut)
		}
	}
	assertEmpty(t, dir)
}

// TestServeOnPostgresNeedsSessionKeys: with PostgreSQL there is no file
// beside the database for a generated session key; serve asks for shared
// keys before it opens anything.
func TestServeOnPostgresNeedsSessionKeys(t *testing.T) {
	dir := inEmptyDir(t, "")
	code, _, errOut := run(t, "serve", "--addr", "127.0.0.1:0", "--db", "postgres://u@127.0.0.1:1/d")
	if code != 2 || !strings.Contains(errOut, "TESSERA_SESSION_KEYS") {
		t.Fatalf("exit %d %q", code, errOut)
	}
	assertEmpty(t, dir)
}

// TestMigrateOnPostgres: tessera migrate brings a fresh PostgreSQL
// database to the SQLite schema's version, and again changes nothing.
func TestMigrateOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	want := "schema version 38"
	for range 2 {
		code, out, errOut := run(t, "migrate", "--db", url)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
		}
	}
	p := filepath.Join(t.TempDir(), "m.db")
	if code, out, _ := run(t, "migrate", "--db", p); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("SQLite migrate: exit %d %q (the two dialects' versions differ)", code, out)
	}
}

// TestServeOnPostgresPagesAnswer: the real binary on a fresh PostgreSQL
// database, with the embedded demo workspace and its seeded history,
// answers its pages and API reads, and the log holds no error. (Seeding
// the demo history on PostgreSQL takes about 8 s on an idle machine; item
// by item, before reports were read a batch at once, 23 s, and over 4
// minutes in a loaded make test.)
func TestServeOnPostgresPagesAnswer(t *testing.T) {
	t.Parallel()
	url, logPath := serveBinary(t, []string{"TESSERA_SESSION_KEYS=0123456789abcdef-pages"},
		"--db", pgtest.URL(t), "--seed-demo", "always", "--anonymous-viewer")
	get := func(path string) (int, string) {
		t.Helper()
		return httpGet(t, url+path)
	}
	paths := []string{"/", "/backfills", "/sensors", "/readyz", "/metrics", "/api/v1/assets", "/api/v1/backfills", "/api/v1/schedules", "/api/v1/sensors"}
	code, body := get("/api/v1/assets")
	var assets struct {
		Assets []struct{ Key string } `json:"assets"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &assets) != nil || len(assets.Assets) == 0 {
		t.Fatalf("assets: %d %.300s", code, body)
	}
	for _, a := range assets.Assets {
		paths = append(paths, "/assets/"+a.Key, "/api/v1/assets/"+a.Key+"/partitions", "/api/v1/assets/"+a.Key+"/staleness",
			"/api/v1/assets/"+a.Key+"/gaps")
	}
	code, body = get("/api/v1/backfills")
	var bfs struct {
		Backfills []struct{ ID string } `json:"backfills"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &bfs) != nil {
		t.Fatalf("backfills: %d %.300s", code, body)
	}
	for _, b := range bfs.Backfills {
		paths = append(paths, "/backfills/"+b.ID, "/api/v1/backfills/"+b.ID)
	}
	for _, p := range paths {
		if code, body := get(p); code != 200 {
			t.Errorf("GET %s: %d %.300s", p, code, body)
		}
	}
	log, _ := os.ReadFile(logPath)
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("server log: %s", l)
		}
	}
}

// TestDBFlagRefusesKeywordConnectionStrings: a PostgreSQL keyword/value
// connection string given to --db (or TESSERA_DB) is refused (exit 2) with
// the postgres:// URL of the same settings, and creates no SQLite file of
// that name; an empty postgres:// URL is refused too.
func TestDBFlagRefusesKeywordConnectionStrings(t *testing.T) {
	dir := inEmptyDir(t, "0123456789abcdef0123")
	wantDBRefused(t, "host=127.0.0.1 port=5432 user=postgres password=s3cret dbname=t1", 2,
		"keyword/value connection string", "postgres://postgres@127.0.0.1:5432/t1", "nothing was written")
	wantDBRefused(t, "postgres://", 2, "names no host nor database")
	t.Setenv("TESSERA_DB", "host=h dbname=d")
	if code, _, errOut := run(t, "migrate"); code != 2 || !strings.Contains(errOut, "postgres://user@h:5432/d") {
		t.Errorf("TESSERA_DB=host=h dbname=d: exit %d %q", code, errOut)
	}
	assertEmpty(t, dir)
}

// TestPostgresRefusesConnectionWorded: a server that answers but refuses
// the connection is worded from its SQLSTATE, not pgx's text: a missing
// database (3D000) says to create it, an unknown role (28000) says the
// user may not connect; exit 3, nothing written.
func TestPostgresRefusesConnectionWorded(t *testing.T) {
	admin := pgtest.AdminURL(t) // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
	dir := inEmptyDir(t, "0123456789abcdef0123")
	server := strings.TrimPrefix(admin, "postgres://postgres@")
	server = server[:strings.Index(server, "/")]
	cases := map[string]string{
		strings.Replace(admin, "/postgres?", "/nosuchdb?", 1): "database nosuchdb does not exist on " + server + ": create it (CREATE DATABASE nosuchdb) or fix --db",
		strings.Replace(admin, "//postgres@", "//nobody@", 1): "PostgreSQL on " + server + " does not let user nobody connect to database postgres",
	}
	for url, want := range cases {
		for _, cmd := range [][]string{{"migrate"}, {"serve", "--addr", "127.0.0.1:0"}} {
			code, _, errOut := run(t, append(cmd, "--db", url)...)
			if code != 3 || !strings.Contains(errOut, want) || strings.Contains(errOut, "SQLSTATE") {
				t.Errorf("%v --db %s: exit %d %q, want 3 saying %q", cmd, url, code, errOut, want)
			}
		}
	}
	assertEmpty(t, dir)
}
