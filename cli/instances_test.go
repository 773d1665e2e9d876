package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// runBinary runs the real binary with args (and env) to its end, within
// 60 s, and returns its exit code and output.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tesseraBin, args...)
	cmd.Env = append(append(os.Environ(), "TESSERA_LOG_FORMAT=text"), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("%v: %v\n%s", args, err, out)
	return 0, ""
}

// TestServeExitsWhenPostgresIsDownAtStart: the real binary's serve, given
// the URL of a PostgreSQL server that is stopped, exits 3 at once with a
// message that names the server and says what to check.
func TestServeExitsWhenPostgresIsDownAtStart(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	url := k.URL(t)
	k.Stop(t)
	start := time.Now()
	code, out := runBinary(t, []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}, "serve", "--addr", "127.0.0.1:0", "--db", url)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, out)
	}
	for _, want := range []string{"cannot reach PostgreSQL at postgres://postgres@127.0.0.1:", "check that the server runs"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("serve took %s to give up", took)
	}
}

// TestRefusesDatabaseOfNewerSchema: serve (the real binary) and migrate,
// on a database that a newer tessera migrated, exit 3 naming both schema
// versions, on both dialects, and write nothing.
func TestRefusesDatabaseOfNewerSchema(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) {
		store := teststore.OpenOn(t, d)
		loc := store.Location().Path
		if d == db.Postgres {
			loc = store.Location().URL
		}
		newer, binary, err := store.MarkSchemaNewerForTest(3)
		if err != nil {
			t.Fatal(err)
		}
		count := func() (n int) {
			if err := store.RawReader().Get(&n, `SELECT (SELECT COUNT(*) FROM goose_db_version) + (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM assets)`); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		want := fmt.Sprintf("has schema version %d, newer than this tessera's newest migration %d", newer, binary)
		for _, args := range [][]string{
			{"serve", "--addr", "127.0.0.1:0", "--db", loc, "--seed-demo", "never"},
			{"migrate", "--db", loc},
		} {
			code, out := runBinary(t, []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}, args...)
			if code != 3 || !strings.Contains(out, want) || !strings.Contains(out, "nothing was written") {
				t.Fatalf("%s: exit %d, want 3 and %q:\n%s", args[0], code, want, out)
			}
		}
		if after := count(); after != before {
			t.Fatalf("rows %d → %d: something was written", before, after)
		}
	})
}

// TestRunLogTailOnEveryInstance: two real servers on one PostgreSQL
// database; while a command attempt runs (on whichever instance planned
// it), the run's log tail is served by both: by the one running it from
// its memory, by the other from the store.
func TestRunLogTailOnEveryInstance(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	url := pgtest.URL(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.yaml")
	if err := os.WriteFile(ws, []byte(testkit.Assets(
		testkit.Asset("tail.daily", "{daily: {start: 2025-01-01}}", "retries: {max_attempts: 1}", testkit.Shell(`echo tail-line-one; sleep 4; echo tail-line-two`)),
	)), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("correct-horse-battery\n"), 0o600)
	env := []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}
	if code, out := runBinary(t, env, "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	if code, out := runBinary(t, env, "user", "add", "ops", "--role", "operator", "--password-file", pw, "--db", url); code != 0 {
		t.Fatalf("user add: %s", out)
	}
	tok := strings.TrimSpace(mustRun(t, "token", "create", "--user", "ops", "--name", "tail", "--db", url))
	var urls []string
	for range 2 {
		addr := testkit.FreeAddr(t)
		_, logPath := startServe(t, env, "--addr", addr, "--db", url, "--workspace", ws, "--seed-demo", "never")
		waitReady(t, http.DefaultClient, "http://"+addr, logPath)
		urls = append(urls, "http://"+addr)
	}
	s := server{URL: urls[0], Token: tok}
	code, out, errOut := s.cli(t, "backfill", "create", "tail.daily", "--partitions", "2025-01-01", "--json")
	if code != 0 {
		t.Fatalf("backfill create: %d %s %s", code, out, errOut)
	}
	var bf struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &bf); err != nil || bf.ID == "" {
		t.Fatalf("backfill create answered %q: %v", out, err)
	}
	get := func(base, path string, v any) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(v)
		return resp.StatusCode
	}
	var runID string
	testkit.Eventually(t, 30*time.Second, "the backfill's run to be planned", func() bool {
		var page struct {
			Chunks []struct {
				ID string `json:"id"`
			} `json:"chunks"`
		}
		if get(urls[1], "/api/v1/backfills/"+bf.ID+"/chunks", &page) != 200 || len(page.Chunks) == 0 {
			return false
		}
		runID = page.Chunks[0].ID
		return true
	})
	for i, base := range urls {
		testkit.Eventually(t, 30*time.Second, "instance "+strconv.Itoa(i)+" to tail the running attempt's log", func() bool {
			var r struct {
				State   string `json:"state"`
				LogTail string `json:"log_tail"`
			}
			return get(base, "/api/v1/runs/"+runID, &r) == 200 && r.State == "running" &&
				strings.Contains(r.LogTail, "tail-line-one") && !strings.Contains(r.LogTail, "tail-line-two")
		})
	}
}

// TestSecondInstanceWithOtherWorkspaceSaysSo: two real servers on one
// PostgreSQL database, the second started with a workspace file that
// defines an asset differently and has one more: its log and its /readyz
// (503) name the assets that differ and say it does not plan; the first
// stays ready.
func TestSecondInstanceWithOtherWorkspaceSaysSo(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	dir := t.TempDir()
	env := []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}
	if code, out := runBinary(t, env, "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	first := testkit.Assets(testkit.Asset("ws.daily", "{daily: {start: 2025-01-01}}", testkit.Shell(`true`)))
	second := testkit.Assets(
		testkit.Asset("ws.daily", "{daily: {start: 2025-01-01}}", testkit.Shell(`echo another definition`)),
		testkit.Asset("ws.extra", "{daily: {start: 2025-01-01}}", testkit.Shell(`true`)),
	)
	var urls, logs []string
	for i, ws := range []string{first, second} {
		p := filepath.Join(dir, fmt.Sprintf("ws%d.yaml", i))
		if err := os.WriteFile(p, []byte(ws), 0o644); err != nil {
			t.Fatal(err)
		}
		addr := testkit.FreeAddr(t)
		_, logPath := startServe(t, env, "--addr", addr, "--db", url, "--workspace", p, "--seed-demo", "never")
		if i == 0 {
			waitReady(t, http.DefaultClient, "http://"+addr, logPath)
		}
		urls, logs = append(urls, "http://"+addr), append(logs, logPath)
	}
	type readiness struct {
		Status    string `json:"status"`
		Reason    string `json:"reason"`
		Workspace *struct {
			Differs bool     `json:"differs"`
			Assets  []string `json:"assets"`
		} `json:"workspace"`
	}
	readyz := func(base string) (int, readiness) {
		var rd readiness
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0, rd
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&rd)
		return resp.StatusCode, rd
	}
	var rd readiness
	testkit.Eventually(t, 30*time.Second, "the second instance's /readyz to say its workspace differs", func() bool {
		var code int
		code, rd = readyz(urls[1])
		return code == http.StatusServiceUnavailable && rd.Workspace != nil
	})
	if !rd.Workspace.Differs || strings.Join(rd.Workspace.Assets, ",") != "ws.daily,ws.extra" || !strings.Contains(rd.Reason, "does not plan") {
		t.Fatalf("second /readyz %+v %+v", rd, rd.Workspace)
	}
	log, _ := os.ReadFile(logs[1])
	if !strings.Contains(string(log), "workspace differs from another instance's; not planning") || !strings.Contains(string(log), "ws.daily,ws.extra") {
		t.Fatalf("the second instance's log does not say which assets differ:\n%s", log)
	}
	if code, rd := readyz(urls[0]); code != http.StatusOK || rd.Workspace != nil {
		t.Fatalf("first /readyz %d %+v", code, rd)
	}
}

// TestThreeInstancesStartTogetherOnANewDatabase: deploy/compose.yaml's
// start, with the real binary: three `serve` processes started at once on
// one new PostgreSQL database (the same workspace and session keys) all
// become ready; the schema is migrated once and exactly one of them
// creates the first admin and prints its password.
func TestThreeInstancesStartTogetherOnANewDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := writeFile(t, "ws.yaml", clientWorkspace)
	env := []string{"TESSERA_SESSION_KEYS=0123456789abcdef-three", "TESSERA_SEED_DEMO=never"}
	var addrs, logs []string
	for range 3 {
		addrs = append(addrs, testkit.FreeAddr(t))
	}
	for _, a := range addrs {
		_, logPath := startServe(t, env, "--addr", a, "--db", url, "--workspace", ws)
		logs = append(logs, logPath)
	}
	for i, a := range addrs {
		waitReady(t, http.DefaultClient, "http://"+a, logs[i])
	}
	admins := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		admins += len(regexp.MustCompile(`created first admin account`).FindAll(b, -1))
	}
	if admins != 1 {
		t.Fatalf("%d instances created the first admin, want 1", admins)
	}
}

// TestDifferingInstanceWritesNothing (issue 23 audit): a second real
// instance started on the same PostgreSQL database with another workspace
// (the embedded demo) does not rewrite the shared catalog (the first
// instance's assets stay, none of its own is added, none marked removed),
// refuses to create a backfill with a 409 naming what differs and writing
// nothing, and the first instance stays ready.
func TestDifferingInstanceWritesNothing(t *testing.T) {
	t.Parallel()
	s := startServerOn(t, db.Postgres, clientWorkspace)
	addr := testkit.FreeAddr(t)
	// A lease TTL of a minute: the second instance takes the first for dead
	// if its heartbeat is older than the TTL, and under a loaded machine's
	// test run the first has gone 5 s (the default) without one.
	_, logPath := startServe(t, []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test", "TESSERA_LEASE_TTL=60s"}, "--addr", addr, "--db", s.DB)
	second := "http://" + addr
	testkit.Eventually(t, 30*time.Second, "the second instance's /readyz to say its workspace differs", func() bool {
		resp, err := http.Get(second + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var rd struct {
			Workspace *struct{ Differs bool } `json:"workspace"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&rd)
		return resp.StatusCode == http.StatusServiceUnavailable && rd.Workspace != nil && rd.Workspace.Differs
	})
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "not syncing it into the shared catalog") || !strings.Contains(string(log), "t.daily") {
		t.Fatalf("the second instance's log does not say it did not sync, and what differs:\n%s", log)
	}
	store := teststore.OpenAt(t, s.DB)
	var rows []struct {
		Key     string `db:"key"`
		Removed bool   `db:"removed"`
	}
	if err := store.RawReader().Select(&rows, `SELECT key, removed FROM assets ORDER BY key`); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		if r.Removed {
			t.Errorf("asset %s marked removed by the instance whose workspace differs", r.Key)
		}
		keys = append(keys, r.Key)
	}
	if strings.Join(keys, ",") != "t.daily,t.flaky,t.one" {
		t.Fatalf("catalog assets %v, want the first instance's only", keys)
	}

	body := `{"assets":["crm.accounts_snapshot"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"},"chunk_size":1,"max_concurrent_runs":1}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", second+"/api/v1/backfills", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	e := eb.Error
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || e.Code != "workspace_differs" || !strings.Contains(e.Message, "differs from the cluster's") || !strings.Contains(e.Message, "t.daily") {
		t.Fatalf("create on the differing instance: %d %+v, want 409 workspace_differs naming t.daily", resp.StatusCode, e)
	}
	var n int
	if err := store.RawReader().Get(&n, `SELECT COUNT(*) FROM backfills`); err != nil || n != 0 {
		t.Fatalf("backfills written: %d %v", n, err)
	}
	// It still serves reads from the database as it is.
	for _, path := range []string{"/api/v1/assets", "/api/v1/backfills", "/api/v1/schedules"} {
		req, _ := http.NewRequest("GET", second+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET %s on the differing instance: %d, want 200", path, r.StatusCode)
		}
	}
	if r, err := http.Get(s.URL + "/readyz"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("first instance not ready: %v %v", r, err)
	} else {
		r.Body.Close()
	}
}
