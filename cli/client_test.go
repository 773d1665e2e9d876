package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

var tesseraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tessera-cli-test-")
	if err != nil {
		panic(err)
	}
	tesseraBin = filepath.Join(dir, "tessera")
	// No test sees a config file, TESSERA_URL or TESSERA_TOKEN of the
	// machine's (noConfig for the whole process), so that the tests that
	// set no other variable run in parallel.
	os.Setenv("TESSERA_CONFIG", filepath.Join(dir, "none.json"))
	os.Unsetenv("TESSERA_URL")
	os.Unsetenv("TESSERA_TOKEN")
	prebuilt, err := testkit.PrebuiltBinary() // make test built it once for web, cli and e2e
	if prebuilt != "" {
		tesseraBin = prebuilt
	}
	build := exec.Command("go", "build", "-o", tesseraBin, "..")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err == nil && prebuilt == "" {
		err = build.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building tessera for the CLI tests:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

var clientWorkspace = testkit.Assets(
	testkit.Asset("t.daily", "{daily: {start: 2025-01-01}}", "code_version: v1", "executor: {demo: {duration: 1ms-3ms}}"),
	testkit.Asset("t.flaky", "{daily: {start: 2025-01-01}}", "retries: {max_attempts: 1, backoff: 1s}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
	testkit.Asset("t.one", "{static: [only]}"),
)

type server struct {
	URL, Token, AdminToken, DB string
	WS                         string      // the workspace file it serves
	Proc                       *os.Process // the server process
}

// startServer runs the real binary on a fresh database with an operator
// token created through the CLI.
func startServer(t *testing.T) server {
	t.Helper()
	return startServerWith(t, clientWorkspace)
}

// startServerWith is startServer serving the given workspace, or the
// embedded demo (seeded) when workspace is "".
func startServerWith(t *testing.T, workspace string) server {
	t.Helper()
	return startServerOn(t, db.SQLite, workspace)
}

// eachServer runs f on each dialect (teststore.EachDialect) with a real
// server of the workspace on a store of that dialect (startServerOn).
func eachServer(t *testing.T, workspace string, f func(t *testing.T, s server)) {
	t.Helper()
	teststore.EachDialect(t, func(t *testing.T, d db.Dialect) { f(t, startServerOn(t, d, workspace)) })
}

// startServerOn is startServerWith on a store of dialect d: a SQLite file,
// or a fresh database of the package's PostgreSQL cluster (the server then
// takes its session key from TESSERA_SESSION_KEYS).
func startServerOn(t *testing.T, d db.Dialect, workspace string) server {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.yaml")
	os.WriteFile(ws, []byte(workspace), 0o644)
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("correct-horse-battery\n"), 0o600)
	dbPath := filepath.Join(dir, "t.db")
	var env []string
	if d == db.Postgres {
		dbPath = pgtest.URL(t)
		env = []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}
	}
	mustRun(t, "migrate", "--db", dbPath)
	tok := userToken(t, dbPath, pw, "ops", "operator", "cli-test")
	adminTok := userToken(t, dbPath, pw, "boss", "admin", "cli-admin")
	addr := testkit.FreeAddr(t)
	args := []string{"--addr", addr, "--db", dbPath, "--workspace", ws}
	if workspace == "" {
		args = args[:4]
	}
	cmd, logPath := startServe(t, env, args...)
	url := "http://" + addr
	waitReady(t, http.DefaultClient, url, logPath)
	return server{URL: url, Token: tok, AdminToken: adminTok, DB: dbPath, WS: ws, Proc: cmd.Process}
}

func (s server) cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append(args, "--server", s.URL, "--token", s.Token)...)
}

func TestCLIBackfillLifecycle(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {

		code, out, errOut := s.cli(t, "asset", "list")
		if code != 0 || !strings.Contains(out, "t.daily") || !strings.Contains(out, "MISSING") {
			t.Fatalf("asset list: %d %q %q", code, out, errOut)
		}
		code, out, _ = s.cli(t, "asset", "list", "--json")
		var assets struct{ Assets []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &assets) != nil || len(assets.Assets) != 3 {
			t.Fatalf("asset list --json: %d %q", code, out)
		}

		code, out, errOut = s.cli(t, "backfill", "preview", "t.daily", "--start", "2025-01-01", "--end", "2025-01-31", "--chunk-size", "7")
		if code != 0 || !strings.Contains(out, "0 materialized (0 of them stale), 0 failed, 0 in progress, 31 missing") ||
			!strings.Contains(out, "t.daily: 2025-01-01, 2025-01-02, 2025-01-03, 2025-01-04, 2025-01-05, 2025-01-06, 2025-01-07\n") || strings.Contains(out, "map[") {
			t.Fatalf("preview: %d %q %q", code, out, errOut)
		}
		code, out, _ = s.cli(t, "backfill", "preview", "t.daily", "--start", "2025-01-01", "--end", "2025-01-31", "--chunk-size", "7", "--json")
		var pv struct {
			TotalPartitions int64 `json:"total_partitions"`
			TotalChunks     int64 `json:"total_chunks"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &pv) != nil || pv.TotalPartitions != 31 || pv.TotalChunks != 5 {
			t.Fatalf("preview --json: %d %q", code, out)
		}

		// --wait until success: exit 0, plain progress lines (not a terminal), final state.
		code, out, errOut = s.cli(t, "backfill", "create", "t.daily", "--start", "2025-02-01", "--end", "2025-02-28", "--chunk-size", "4", "--title", "february", "--wait")
		if code != 0 || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "28/28 done") {
			t.Fatalf("create --wait: %d %q %q", code, out, errOut)
		}
		id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]

		code, out, _ = s.cli(t, "backfill", "get", id)
		if code != 0 || !strings.Contains(out, "february") || !strings.Contains(out, "28 materialized") ||
			!strings.Contains(out, "selection   range 2025-02-01 … 2025-02-28, chunks of 4, at most 4 at once") {
			t.Fatalf("get: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "backfill", "get", id, "--json")
		var got map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got["state"] != "SUCCEEDED" {
			t.Fatalf("get --json: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "backfill", "chunks", id)
		if code != 0 || strings.Count(out, "succeeded") != 7 || !strings.Contains(out, " 2025-02-01 … 2025-02-04 ") {
			t.Fatalf("chunks: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "backfill", "events", id)
		if code != 0 || !strings.Contains(out, "ops") {
			t.Fatalf("events: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "backfill", "list", "--state", "SUCCEEDED")
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "100%") {
			t.Fatalf("list: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "materialized", "--limit", "5", "--json")
		var parts struct{ Partitions []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &parts) != nil || len(parts.Partitions) != 5 || parts.Partitions[0]["partition"] != "2025-02-01" {
			t.Fatalf("asset partitions: %d %q", code, out)
		}

		// --wait until failure: exit code 1, and retry-failed makes a child of exactly the failed partitions.
		code, out, errOut = s.cli(t, "backfill", "create", "t.flaky", "--partitions", "2025-03-01,2025-03-02,2025-03-03", "--wait")
		if code != 1 || !strings.Contains(out, "FAILED") || !strings.Contains(errOut, "3 partitions failed") {
			t.Fatalf("failing --wait: %d %q %q", code, out, errOut)
		}
		failedID := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		// The failed chunk run: its attempt and each partition's error.
		code, out, _ = s.cli(t, "backfill", "chunks", failedID, "--json")
		var fchunks struct{ Chunks []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &fchunks) != nil || len(fchunks.Chunks) == 0 {
			t.Fatalf("chunks --json: %d %q", code, out)
		}
		code, out, errOut = s.cli(t, "backfill", "run", fchunks.Chunks[0]["id"].(string))
		if code != 0 || !strings.Contains(out, "state  failed") || !regexp.MustCompile(`(?m)^1\s+failed\s`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^2025-03-01\s+failed\s+1\s+demo: simulated failure$`).MatchString(out) {
			t.Fatalf("backfill run: %d %q %q", code, out, errOut)
		}
		if code, _, errOut = s.cli(t, "backfill", "run", "run_nope"); code != 2 || !strings.Contains(errOut, "not found") {
			t.Fatalf("backfill run of an unknown run: %d %q", code, errOut)
		}
		// An unknown id points at the command that lists the valid ones.
		if code, _, errOut = s.cli(t, "backfill", "get", "bf_nope"); code != 2 || !strings.Contains(errOut, "list backfills with `tessera backfill list`") {
			t.Fatalf("backfill get of an unknown backfill: %d %q", code, errOut)
		}
		// --asset: only the backfills selecting the asset.
		code, out, _ = s.cli(t, "backfill", "list", "--asset", "t.flaky")
		if code != 0 || !strings.Contains(out, failedID) || strings.Contains(out, id) {
			t.Fatalf("list --asset t.flaky: %d %q", code, out)
		}
		if code, out, _ = s.cli(t, "backfill", "list", "--asset", "t.one"); code != 0 || out != "no backfills match\n" {
			t.Fatalf("list --asset with none: %d %q", code, out)
		}
		if code, _, errOut = s.cli(t, "backfill", "list", "--asset", "nope"); code != 2 || !strings.Contains(errOut, `unknown asset "nope"`) {
			t.Fatalf("list --asset nope: %d %q", code, errOut)
		}
		code, out, errOut = s.cli(t, "backfill", "retry-failed", failedID, "--request-id", "r1", "--json")
		var child map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &child) != nil || child["parent_backfill_id"] != failedID || child["total_partitions"].(float64) != 3 {
			t.Fatalf("retry-failed: %d %q %q", code, out, errOut)
		}
		code, out2, _ := s.cli(t, "backfill", "retry-failed", failedID, "--request-id", "r1", "--json")
		var child2 map[string]any
		json.Unmarshal([]byte(out2), &child2)
		if code != 0 || child2["id"] != child["id"] {
			t.Fatalf("retry-failed with the same request id made another child: %v vs %v", child2["id"], child["id"])
		}

		// Transitions not allowed now are the server's 409, shown as its message.
		code, _, errOut = s.cli(t, "backfill", "pause", id)
		if code != 2 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "SUCCEEDED") {
			t.Fatalf("pause a finished backfill: %d %q", code, errOut)
		}
		code, _, errOut = s.cli(t, "backfill", "get", "nope")
		if code != 2 || !strings.Contains(errOut, "404") || strings.Contains(errOut, "goroutine") {
			t.Fatalf("unknown backfill: %d %q", code, errOut)
		}
	})
}

func TestCLIBadInput(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		cases := []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"backfill", "create", "t.daily", "--start", "2025-01-01", "--partitions", "2025-01-02"}, 2, "cannot be combined"},
			{[]string{"backfill", "create", "t.daily"}, 2, "choose partitions"},
			{[]string{"backfill", "create", "--start", "2025-01-01"}, 2, "at least one asset"},
			{[]string{"backfill", "preview", "t.daily", "--missing", "--dimension", "region"}, 2, "NAME=VALUE"},
			{[]string{"backfill", "run", "run_x", "--partitions", "-1"}, 2, "0 or more"},
			{[]string{"backfill", "create", "t.daily", "--frobnicate"}, 2, "unknown flag"},
			{[]string{"backfill", "create", "t.daily", "--start", "2025-02-01", "--end", "2025-01-01"}, 2, "before"},
			// The server's field names become the CLI's flags.
			{[]string{"backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--chunk-size", "0"}, 2, "--chunk-size must be between 1 and 100000"},
			{[]string{"backfill", "preview", "t.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--concurrency", "-1"}, 2, "--concurrency must be between 1 and"},
			{[]string{"backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--concurrency", "0"}, 2, "--concurrency must be between 1 and"},
			{[]string{"backfill", "list", "--limit", "0"}, 2, "--limit must be"},
			{[]string{"asset", "partitions", "t.daily", "--status", "done"}, 2, "--status: unknown status"},
			{[]string{"backfill", "create", "nope", "--start", "2025-01-01", "--end", "2025-01-02"}, 2, "nope"},
			{[]string{"backfill", "list", "--state", "SLEEPING"}, 2, "SLEEPING"},
			{[]string{"asset", "partitions", "t.daily", "--status", "stale!"}, 2, "stale!"},
		}
		for _, tc := range cases {
			code, _, errOut := s.cli(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) || strings.Contains(errOut, "panic") {
				t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, errOut, tc.code, tc.msg)
			}
		}
		// Nothing was written: the server knows no backfill.
		code, out, _ := s.cli(t, "backfill", "list", "--all", "--json")
		var listed struct{ Backfills []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Backfills) != 0 {
			t.Fatalf("bad input wrote backfills: %d %q", code, out)
		}
		// A server that is down, and a bad token: exit 3, no trace.
		code, _, errOut := run(t, "asset", "list", "--server", "http://127.0.0.1:1", "--token", s.Token)
		if code != 3 || !strings.Contains(errOut, "cannot reach") {
			t.Fatalf("server down: %d %q", code, errOut)
		}
		code, _, errOut = run(t, "asset", "list", "--server", s.URL, "--token", "tsr_bogus")
		if code != 3 || !strings.Contains(errOut, "401") || strings.Contains(errOut, "goroutine") {
			t.Fatalf("bad token: %d %q", code, errOut)
		}
		code, _, errOut = run(t, "asset", "list", "--server", "ftp://x")
		if code != 2 || !strings.Contains(errOut, "http(s) URL") {
			t.Fatalf("bad server URL: %d %q", code, errOut)
		}
	})
}

func TestCLILoginAndTokenPrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tessera", "config.json")
	t.Setenv("TESSERA_CONFIG", cfg)
	t.Setenv("TESSERA_URL", "")
	t.Setenv("TESSERA_TOKEN", "")
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		code, out, errOut := run(t, "login", "--server", s.URL, "--token", s.Token)
		if code != 0 || !strings.Contains(out, "as ops (operator)") {
			t.Fatalf("login: %d %q %q", code, out, errOut)
		}
		st, err := os.Stat(cfg)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("config file %v %v", st, err)
		}
		if code, _, errOut := run(t, "asset", "list"); code != 0 {
			t.Fatalf("with the login config: %d %q", code, errOut)
		}
		t.Setenv("TESSERA_TOKEN", "tsr_wrong")
		if code, _, _ := run(t, "asset", "list"); code != 3 {
			t.Fatalf("TESSERA_TOKEN should beat the config: exit %d", code)
		}
		if code, _, errOut := run(t, "asset", "list", "--token", s.Token); code != 0 {
			t.Fatalf("--token should beat TESSERA_TOKEN: %d %q", code, errOut)
		}
		if code, _, _ := run(t, "login", "--server", s.URL, "--token", "tsr_wrong"); code != 3 {
			t.Fatalf("login with a bad token: exit %d", code)
		}
		// --json answers with what was stored, as JSON (it printed the sentence).
		code, out, errOut = run(t, "login", "--server", s.URL, "--token", s.Token, "--json")
		var got map[string]string
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got["user"] != "ops" || got["role"] != "operator" || got["server"] != s.URL || got["config"] != cfg {
			t.Fatalf("login --json: %d %q %q", code, out, errOut)
		}
	})
}

// TestAPIPaginationAndIdempotentCreates: walking 160 backfills page by page
// (37 a page: four full pages and a part) gives each exactly once; 20
// concurrent identical creates make one backfill. (It walked 1,000: 230 s
// of make test on a loaded machine, for the same pages and cursors.)
func TestAPIPaginationAndIdempotentCreates(t *testing.T) {
	t.Parallel()
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		post := func(body, key string) (int, map[string]any) {
			req, _ := http.NewRequest("POST", s.URL+"/api/v1/backfills", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+s.Token)
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("Idempotency-Key", key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return 0, nil
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		body := `{"assets":["t.one"],"selector":{"type":"explicit","keys":["only"]},"chunk_size":1,"max_concurrent_runs":1}`
		var wg sync.WaitGroup
		ids := make([]string, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, out := post(body, "same-request")
				if code != 200 && code != 201 {
					t.Errorf("concurrent create: %d %v", code, out)
					return
				}
				ids[i], _ = out["id"].(string)
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id == "" || id != ids[0] {
				t.Fatalf("20 identical creates gave ids %v", ids)
			}
		}
		if code, out := post(strings.Replace(body, `"max_concurrent_runs":1`, `"max_concurrent_runs":2`, 1), "same-request"); code != 409 {
			t.Fatalf("same key, different body: %d %v", code, out)
		}
		const total = 160
		for i := 1; i < total; i++ {
			if code, out := post(body, fmt.Sprintf("k%d", i)); code != 201 {
				t.Fatalf("create %d: %d %v", i, code, out)
			}
		}
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			_, b := testkit.Fetch(t, http.DefaultClient, http.MethodGet, s.URL+"/api/v1/backfills?limit=37&cursor="+cursor, s.Token)
			var page struct {
				Backfills []struct {
					ID string `json:"id"`
				}
				NextCursor string `json:"next_cursor"`
			}
			if err := json.Unmarshal([]byte(b), &page); err != nil {
				t.Fatalf("page %d: %s", pages, b)
			}
			for _, bf := range page.Backfills {
				if seen[bf.ID] {
					t.Fatalf("backfill %s listed twice", bf.ID)
				}
				seen[bf.ID] = true
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != total {
			t.Fatalf("walked %d backfills, want %d", len(seen), total)
		}
	})
}

func TestCLIReportTaintStatusGaps(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		code, out, errOut := s.cli(t, "report", "t.daily", "2025-01-01", "2025-01-02", "2025-01-04", "--metadata", `{"rows": 12}`, "--run-id", "ext-1")
		if code != 0 || !strings.Contains(out, "recorded 3 materialized") {
			t.Fatalf("report: %d %q %q", code, out, errOut)
		}
		code, out, _ = s.cli(t, "report", "t.daily", "2025-01-01", "2025-01-02", "2025-01-04", "--run-id", "ext-1", "--json")
		var rep map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep["replayed"].(float64) != 3 {
			t.Fatalf("report replay: %d %q", code, out)
		}
		if code, out, errOut = s.cli(t, "report", "t.daily", "2025-01-03", "--status", "failed", "--error", "source missing"); code != 0 || !strings.Contains(out, "1 failed") {
			t.Fatalf("report failure: %d %q %q", code, out, errOut)
		}
		if code, out, _ = s.cli(t, "report", "t.daily", "--watermark", "2025-01-04"); code != 0 || !strings.Contains(out, "watermark of t.daily is now 2025-01-04") {
			t.Fatalf("watermark: %d %q", code, out)
		}
		// Gaps below the watermark: 2025-01-03 never materialized.
		code, out, errOut = s.cli(t, "gaps", "t.daily", "--json")
		if code != 0 || !strings.Contains(out, `"start": "2025-01-03"`) {
			t.Fatalf("gaps: %d %q %q", code, out, errOut)
		}
		// Taint needs an admin: the operator token is refused, the admin's works.
		code, _, errOut = s.cli(t, "taint", "t.daily", "2025-01-02", "--reason", "bad upstream file")
		if code != 3 || !strings.Contains(errOut, "403") {
			t.Fatalf("operator taint: %d %q", code, errOut)
		}
		code, out, errOut = run(t, "taint", "t.daily", "2025-01-02", "--reason", "bad upstream file", "--server", s.URL, "--token", s.AdminToken)
		if code != 0 || !strings.Contains(out, "tainted t.daily 2025-01-02 (now TAINTED)") {
			t.Fatalf("admin taint: %d %q %q", code, out, errOut)
		}
		// --tainted selects exactly the tainted partition.
		code, out, errOut = s.cli(t, "backfill", "preview", "t.daily", "--tainted")
		if code != 0 || !strings.Contains(out, "t.daily: 2025-01-02\n") || !strings.Contains(out, "1 materialized (1 of them stale)") {
			t.Fatalf("preview --tainted: %d %q %q", code, out, errOut)
		}
		code, out, _ = run(t, "status", "--server", s.URL, "--token", s.AdminToken)
		if code != 0 || !strings.Contains(out, "t.daily") || !strings.Contains(out, "TAINTED 1") || !strings.Contains(out, "GROUP") {
			t.Fatalf("status: %d %q", code, out)
		}
		code, out, _ = run(t, "status", "--json", "--server", s.URL, "--token", s.AdminToken)
		var st struct{ Assets []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Assets) != 3 {
			t.Fatalf("status --json: %d %q", code, out)
		}
		if code, out, _ = run(t, "taint", "t.daily", "2025-01-02", "--clear", "--server", s.URL, "--token", s.AdminToken); code != 0 || !strings.Contains(out, "cleared") {
			t.Fatalf("clear taint: %d %q", code, out)
		}
		// Bad input: clear error, nothing written.
		for _, tc := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"taint", "t.daily", "2025-01-02"}, 2, "--reason"},
			{[]string{"taint", "t.daily", "2025-01-02", "--reason", "x", "--clear"}, 2, "either"},
			{[]string{"report", "t.daily"}, 2, "name the partitions"},
			{[]string{"report", "t.daily", "2025-01-05", "--status", "done"}, 2, "--status"},
			{[]string{"report", "t.daily", "2025-01-05", "--metadata", "[1]"}, 2, "JSON object"},
			{[]string{"report", "t.daily", "2025-01-05", "--at", "yesterday"}, 2, "RFC 3339"},
			{[]string{"report", "t.daily", "not-a-day"}, 2, "not-a-day"},
			{[]string{"report", "t.daily", "--watermark", "1999-01-01"}, 2, "1999-01-01"},
			{[]string{"report", "t.daily", "2025-01-05", "--watermark", "2025-01-05"}, 2, "not both"},
			// An error text with a success would be dropped: refused, nothing recorded.
			{[]string{"report", "t.daily", "2025-01-05", "--error", "oops"}, 2, "--error goes with --status failed"},
			{[]string{"report", "t.daily", "2025-01-05", "--status", "materialized", "--error", "oops"}, 2, "--error goes with --status failed"},
		} {
			code, _, errOut := s.cli(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, errOut, tc.code, tc.msg)
			}
		}
		code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "materialized,failed", "--json")
		var parts struct{ Partitions []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &parts) != nil || len(parts.Partitions) != 4 {
			t.Fatalf("bad input wrote partitions: %d %q", code, out)
		}
	})
}

// TestCLIBackfillGetSaysWhatItWaitsFor: backfill get prints what a running
// backfill's next chunk waits for when none of its runs runs (here its
// pool's throttle), as the API's waiting does.
func TestCLIBackfillGetSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, testkit.ThrottledWorkspace, func(t *testing.T, s server) {
		code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-03", "--chunk-size", "1", "--json")
		if code != 0 {
			t.Fatalf("create: exit %d %q %q", code, out, errOut)
		}
		var b struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, "backfill get to say what it waits for", func() bool {
			code, out, errOut = s.cli(t, "backfill", "get", b.ID)
			return code == 0 && strings.Contains(out, "waiting")
		})
		if !strings.Contains(out, "chunk 1 waits for pool wh: its throttle (1 run per 1 h 0 min) has no run left") {
			t.Fatalf("backfill get:\n%s", out)
		}
	})
}

// TestBrokenLoginConfigDoesNotBlockFlags: a login config that is not valid
// JSON (a half-written file, a hand edit) failed every client command, even
// one given --server and --token, and `tessera login` itself, whose message
// said to run it again: a dead end. The config is now read only for what
// the flags and variables leave out, so login rewrites a broken one; a
// config that cannot be read (a directory) says which file and variable,
// not Go's "read PATH: is a directory".
func TestBrokenLoginConfigDoesNotBlockFlags(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	tok := env.Token(t, auth.RoleViewer)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"server": "http://127.0.0.1:1", "tok`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := func(config string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(tesseraBin, args...)
		cmd.Env = append(os.Environ(), "TESSERA_CONFIG="+config, "TESSERA_URL=", "TESSERA_TOKEN=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := bin(cfg, "asset", "list", "--server", env.URL, "--token", tok); code != 0 {
		t.Fatalf("asset list with --server and --token beside a broken config: exit %d %q", code, out)
	}
	// Without them the broken file is named, and how to mend it works.
	if code, out := bin(cfg, "asset", "list"); code != cli.ExitUsage || !strings.Contains(out, cfg) || !strings.Contains(out, "not valid JSON") {
		t.Fatalf("asset list from a broken config: exit %d %q", code, out)
	}
	if code, out := bin(cfg, "login", "--server", env.URL, "--token", tok); code != 0 {
		t.Fatalf("login over a broken config: exit %d %q", code, out)
	}
	if code, out := bin(cfg, "asset", "list"); code != 0 {
		t.Fatalf("asset list after login rewrote the config: exit %d %q", code, out)
	}
	if code, out := bin(dir, "asset", "list"); code != cli.ExitUsage || !strings.Contains(out, "TESSERA_CONFIG") || !strings.Contains(out, "is a directory") || strings.Contains(out, "error: read ") {
		t.Fatalf("a directory as the config: exit %d %q", code, out)
	}
	// Saving to a directory says so, and leaves no copy of the token.
	if code, out := bin(dir, "login", "--server", env.URL, "--token", tok); code != cli.ExitUsage || !strings.Contains(out, "cannot save the login config to "+dir) {
		t.Fatalf("login into a directory: exit %d %q", code, out)
	}
	if _, err := os.Stat(dir + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused login left %s.tmp (it holds the token): %v", dir, err)
	}
}
