package cli_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"
)

// TestUnknownSubcommandsAreUsageErrors: a mistyped subcommand of any
// command that only groups others exits 2 naming it, with suggestions,
// instead of printing help and exiting 0; `workspace check` is validate.
func TestUnknownSubcommandsAreUsageErrors(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"workspace", "valdate", "x.yaml"}, `unknown command "valdate" for "tessera workspace"; did you mean "validate"?`},
		{[]string{"backfill", "foo"}, `unknown command "foo" for "tessera backfill"; its commands are `},
		{[]string{"token", "crate"}, `unknown command "crate" for "tessera token"; did you mean "create"?`},
		{[]string{"backfill", "creat", "t.daily", "--missing"}, `unknown command "creat" for "tessera backfill"; did you mean "create"?`},
		{[]string{"user", "ad", "bob", "--role", "operator"}, `unknown command "ad" for "tessera user"; did you mean "add"?`},
		{[]string{"bench", "gird"}, `unknown command "gird" for "tessera bench"; did you mean "grid"?`},
		{[]string{"asset", "lst"}, `unknown command "lst" for "tessera asset"; did you mean "list"?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "tessera"`},
		{[]string{"help", "backfill", "crate"}, `unknown command "crate" for "tessera backfill"; did you mean "create"?`},
		{[]string{"completion", "bsh"}, `unknown command "bsh" for "tessera completion"; did you mean "bash"`},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 with %q", tc.args, code, errOut, out, tc.want)
		}
	}
	// A subcommand's own unknown flag is still reported as such.
	if code, _, errOut := run(t, "workspace", "validate", "x.yaml", "--frobnicate"); code != cli.ExitUsage || !strings.Contains(errOut, "unknown flag: --frobnicate") {
		t.Errorf("unknown flag of a subcommand: exit %d %q", code, errOut)
	}
	// A bare group prints its help.
	if code, out, _ := run(t, "workspace"); code != 0 || !strings.Contains(out, "validate") {
		t.Errorf("bare workspace: exit %d %q", code, out)
	}
	if code, out, _ := run(t, "help", "backfill", "create"); code != 0 || !strings.Contains(out, "--idempotency-key") {
		t.Errorf("help backfill create: exit %d %q", code, out)
	}
	// check is an alias of validate: it really validates.
	good := writeFile(t, "good.yaml", string(catalog.DefaultWorkspaceYAML))
	if code, out, errOut := run(t, "workspace", "check", good); code != 0 || !strings.Contains(out, "ok, 6 assets") {
		t.Errorf("workspace check good.yaml: exit %d %q %q", code, out, errOut)
	}
	bad := writeFile(t, "bad.yaml", "assets:\n  x:\n    partitions: {fortnightly: {start: 2025-01-01}}\n    executor: {demo: {duration: 1s}}\n")
	if code, _, errOut := run(t, "workspace", "check", bad); code != cli.ExitUsage || !strings.Contains(errOut, "fortnightly") {
		t.Errorf("workspace check bad.yaml: exit %d %q", code, errOut)
	}
}

// TestBackfillPreviewWithoutAssetsNamesPreview: the usage error names the
// command that was run.
func TestBackfillPreviewWithoutAssetsNamesPreview(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	code, _, errOut := run(t, "backfill", "preview", "--start", "2025-01-01", "--end", "2025-01-02", "--server", "http://127.0.0.1:1")
	if code != cli.ExitUsage || !strings.Contains(errOut, "tessera backfill preview ASSET") || strings.Contains(errOut, "create") {
		t.Fatalf("preview without assets: exit %d %q", code, errOut)
	}
}

// busyAddr returns an address some listener holds for the test's duration.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// serveRefusal is a start of serve that must be refused with a usage
// error before anything is created: its environment (NAME=value), its
// flags and what the error says.
type serveRefusal struct {
	env  []string
	args []string
	want string
}

// wantServeRefused starts serve on a new database path and the busy
// address busy once a case and wants exit 2 with the case's want and every
// one of also in the error, and no database created; a case's environment
// is unset after it. It returns the database path, for more starts.
func wantServeRefused(t *testing.T, busy string, cases []serveRefusal, also ...string) (dbPath string) {
	t.Helper()
	dbPath = filepath.Join(t.TempDir(), "refused.db")
	for _, tc := range cases {
		for _, kv := range tc.env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		code, _, errOut := run(t, append([]string{"serve", "--db", dbPath, "--addr", busy}, tc.args...)...)
		for _, kv := range tc.env {
			k, _, _ := strings.Cut(kv, "=")
			os.Unsetenv(k)
		}
		says := strings.Contains(errOut, tc.want)
		for _, a := range also {
			says = says && strings.Contains(errOut, a)
		}
		if code != cli.ExitUsage || !says {
			t.Errorf("%v %v: exit %d %q, want 2 with %q and %q", tc.env, tc.args, code, errOut, tc.want, also)
		}
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
	return dbPath
}

// serveBinary starts the real binary's serve with args and extra
// environment, waits until it is ready and returns its URL and log path.
func serveBinary(t *testing.T, env []string, args ...string) (url, logPath string) {
	t.Helper()
	addr := testkit.FreeAddr(t)
	_, logPath = startServe(t, env, append([]string{"--addr", addr}, args...)...)
	url = "http://" + addr
	waitReady(t, http.DefaultClient, url, logPath)
	return url, logPath
}

// httpGet GETs url (no credentials) and answers the status and the body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, body := testkit.Fetch(t, http.DefaultClient, http.MethodGet, url, "")
	return resp.StatusCode, body
}

// startServe starts the real binary's serve with args and extra
// environment (text logs to logPath), and stops it when the test ends.
func startServe(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(tesseraBin, append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TESSERA_LOG_FORMAT=text"), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
		}
		logf.Close()
	})
	return cmd, logPath
}

// waitReady waits until the server at url answers /readyz with 200.
func waitReady(t *testing.T, client *http.Client, url, logPath string) *http.Response {
	t.Helper()
	var resp *http.Response
	ready := false
	defer func() {
		if !ready { // say why it did not start
			b, _ := os.ReadFile(logPath)
			t.Logf("the server's log:\n%s", b)
		}
	}()
	// 2 minutes: in make test, beside both passes and their browsers, a
	// server had not logged its first line after 15 s (TestServeTLS), and
	// on a slow CI machine one seeding the demo history did not listen
	// after 45 s.
	testkit.Eventually(t, 2*time.Minute, url+"/readyz to answer 200", func() bool {
		var err error
		if resp, err = client.Get(url + "/readyz"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	ready = true
	return resp
}

var adminPasswordLine = regexp.MustCompile(`created first admin account.* user=admin password=(\S+)`)

// TestServeChecksEverythingBeforeCreatingTheFirstAdmin: a start refused for
// a bad setting, a bad or busy address creates no database and prints no
// password, so the first successful start still prints it.
func TestServeChecksEverythingBeforeCreatingTheFirstAdmin(t *testing.T) {
	t.Setenv("TESSERA_LOG_FORMAT", "text")
	dbPath := filepath.Join(t.TempDir(), "first.db")
	busy := busyAddr(t)
	cases := []struct {
		env, args []string
		code      int
		want      string
	}{
		{[]string{"TESSERA_MAX_CONCURRENT_RUNS=abc"}, []string{"--addr", busy}, cli.ExitUsage, "TESSERA_MAX_CONCURRENT_RUNS"},
		{[]string{"TESSERA_LEASE_TTL=soon"}, []string{"--addr", busy}, cli.ExitUsage, "TESSERA_LEASE_TTL"},
		{[]string{"TESSERA_SESSION_KEYS=short"}, []string{"--addr", busy}, cli.ExitUsage, "TESSERA_SESSION_KEYS"},
		{nil, []string{"--addr", "127.0.0.1:99999"}, cli.ExitUsage, "--addr"},
		{nil, []string{"--addr", "127.0.0.1:nope"}, cli.ExitUsage, "--addr"},
		{nil, []string{"--addr", busy}, cli.ExitServer, "address already in use"},
	}
	for _, tc := range cases {
		for _, kv := range tc.env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		code, _, errOut := run(t, append([]string{"serve", "--db", dbPath, "--seed-demo", "never"}, tc.args...)...)
		for _, kv := range tc.env {
			k, _, _ := strings.Cut(kv, "=")
			os.Unsetenv(k)
		}
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v %v: exit %d %q, want %d with %q", tc.env, tc.args, code, errOut, tc.code, tc.want)
		}
		if strings.Contains(errOut, "password") {
			t.Errorf("%v %v: a refused start printed a password: %q", tc.env, tc.args, errOut)
		}
		if _, err := os.Stat(dbPath); err == nil {
			t.Fatalf("%v %v: a refused start created the database", tc.env, tc.args)
		}
	}
	// The first start that succeeds prints the first admin's password.
	_, logPath := serveBinary(t, nil, "--db", dbPath, "--seed-demo", "never")
	testkit.Eventually(t, 30*time.Second, "the first successful start to print the admin password", func() bool {
		b, _ := os.ReadFile(logPath)
		return adminPasswordLine.Match(b)
	})
}

// TestServeRejectsZeroEngineSettings: --max-concurrent-runs 0 and
// --lease-ttl 0 are refused like negative values, before anything is
// created (the busy address would fail the start if they were accepted).
func TestServeRejectsZeroEngineSettings(t *testing.T) {
	busy := busyAddr(t)
	dbPath := wantServeRefused(t, busy, []serveRefusal{
		{nil, []string{"--max-concurrent-runs", "0"}, "--max-concurrent-runs must be a positive number, got 0"},
		{nil, []string{"--max-concurrent-runs", "-3"}, "--max-concurrent-runs must be a positive number, got -3"},
		{nil, []string{"--lease-ttl", "0"}, "--lease-ttl must be a positive duration"},
		{nil, []string{"--lease-ttl", "-1s"}, "--lease-ttl must be a positive duration"},
		{nil, []string{"--shutdown-grace", "-1s"}, "--shutdown-grace must be 0 or more, got -1s"},
		{[]string{"TESSERA_LEASE_TTL=0s"}, nil, `TESSERA_LEASE_TTL must be a positive duration such as 5s, got "0s"`},
		{[]string{"TESSERA_SHUTDOWN_GRACE=-1s"}, nil, `TESSERA_SHUTDOWN_GRACE must be a duration such as 10s (0 interrupts active runs at once), got "-1s"`},
	})
	// The flag beats the environment, and a valid flag is not refused for
	// an environment value it overrides.
	t.Setenv("TESSERA_MAX_CONCURRENT_RUNS", "0")
	if code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy); code != cli.ExitUsage || !strings.Contains(errOut, "TESSERA_MAX_CONCURRENT_RUNS") {
		t.Errorf("TESSERA_MAX_CONCURRENT_RUNS=0: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy, "--max-concurrent-runs", "8"); code != cli.ExitServer || !strings.Contains(errOut, "address already in use") {
		t.Errorf("--max-concurrent-runs 8 over TESSERA_MAX_CONCURRENT_RUNS=0: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
}

// TestBooleanEnvSettings: TESSERA_ANONYMOUS_VIEWER and TESSERA_TRUST_PROXY
// accept 1/0, true/false, yes/no, on/off in any case, and refuse anything
// else naming the variable.
func TestBooleanEnvSettings(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bool.db")
	busy := busyAddr(t)
	for _, env := range []string{"TESSERA_ANONYMOUS_VIEWER", "TESSERA_TRUST_PROXY"} {
		for _, bad := range []string{"maybe", "y", "2", "enabled"} {
			t.Setenv(env, bad)
			code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy)
			if code != cli.ExitUsage || !strings.Contains(errOut, env+`="`+bad+`"`) || !strings.Contains(errOut, "1/0, true/false, yes/no or on/off") {
				t.Errorf("%s=%s: exit %d %q", env, bad, code, errOut)
			}
		}
		// A flag overrides a bad variable (the busy address then fails the start).
		flag := map[string]string{"TESSERA_ANONYMOUS_VIEWER": "--anonymous-viewer=off", "TESSERA_TRUST_PROXY": "--trust-proxy=no"}[env]
		if code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy, flag); code != cli.ExitServer || !strings.Contains(errOut, "address already in use") {
			t.Errorf("%s over a bad %s: exit %d %q", flag, env, code, errOut)
		}
		os.Unsetenv(env)
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
	// The log settings are refused the same way, before anything is created.
	for env, bad := range map[string]string{"TESSERA_LOG_FORMAT": "xml", "TESSERA_LOG_LEVEL": "loud"} {
		t.Setenv(env, bad)
		code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy)
		if code != cli.ExitUsage || !strings.Contains(errOut, env+`="`+bad+`"`) || !strings.Contains(errOut, "use ") {
			t.Errorf("%s=%s: exit %d %q", env, bad, code, errOut)
		}
		os.Unsetenv(env)
	}
	for _, good := range [][2]string{{"TESSERA_LOG_FORMAT", "TEXT"}, {"TESSERA_LOG_LEVEL", "warn"}} {
		t.Setenv(good[0], good[1])
		if code, _, errOut := run(t, "serve", "--db", dbPath, "--addr", busy); code != cli.ExitServer || !strings.Contains(errOut, "address already in use") {
			t.Errorf("%s=%s: exit %d %q", good[0], good[1], code, errOut)
		}
		os.Unsetenv(good[0])
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
	get := func(url string) int {
		code, _ := httpGet(t, url+"/api/v1/assets")
		return code
	}
	// "YES" turns the anonymous viewer on: the API answers without a token.
	url, _ := serveBinary(t, []string{"TESSERA_ANONYMOUS_VIEWER=YES", "TESSERA_TRUST_PROXY=on"}, "--db", filepath.Join(t.TempDir(), "yes.db"), "--seed-demo", "never")
	if code := get(url); code != 200 {
		t.Errorf("TESSERA_ANONYMOUS_VIEWER=YES: anonymous GET answered %d", code)
	}
	url, _ = serveBinary(t, []string{"TESSERA_ANONYMOUS_VIEWER=0"}, "--db", filepath.Join(t.TempDir(), "no.db"), "--seed-demo", "never")
	if code := get(url); code != 401 {
		t.Errorf("TESSERA_ANONYMOUS_VIEWER=0: anonymous GET answered %d", code)
	}
}

// TestUserAddWithoutPasswordSaysHowToPassIt: with no terminal and nothing on
// standard input, the error says how to give the password.
func TestUserAddWithoutPasswordSaysHowToPassIt(t *testing.T) {
	t.Parallel()
	dbp, _ := accountsDB(t)
	cmd := exec.Command(tesseraBin, "user", "add", "bob", "--role", "operator", "--db", dbp)
	cmd.Stdin = nil // /dev/null
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != cli.ExitUsage || !strings.Contains(string(out), "--password-file") || !strings.Contains(string(out), "standard input") {
		t.Fatalf("user add without a password: %v %q", err, out)
	}
	if strings.Contains(string(out), "Password (at least") {
		t.Errorf("prompted for a password without a terminal: %q", out)
	}
	if u, _ := userCount(t, dbp); u != 0 {
		t.Fatalf("user add without a password wrote %d users", u)
	}
}

var slowWorkspace = testkit.Assets(
	testkit.Asset("t.slow", "{daily: {start: 2025-01-01}}", "executor: {demo: {duration: 400ms}}"),
)

// TestBackfillTransitionsWait: pause --wait returns once no run is running,
// resume --wait once it is RUNNING, cancel --wait once it is CANCELED.
func TestBackfillTransitionsWait(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServerWith(t, slowWorkspace)
	code, out, errOut := s.cli(t, "backfill", "create", "t.slow", "--start", "2025-01-01", "--end", "2025-01-30", "--chunk-size", "1", "--concurrency", "2", "--json")
	var b map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	id := b["id"].(string)
	get := func() (state string, running float64) {
		t.Helper()
		code, out, errOut := s.cli(t, "backfill", "get", id, "--json")
		var g struct {
			State  string             `json:"state"`
			Counts map[string]float64 `json:"counts"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &g) != nil {
			t.Fatalf("get: %d %q %q", code, out, errOut)
		}
		return g.State, g.Counts["running"]
	}
	testkit.Eventually(t, 30*time.Second, "a run of the backfill to start", func() bool { _, running := get(); return running > 0 })

	code, out, errOut = s.cli(t, "backfill", "pause", id, "--wait")
	if code != 0 || !strings.Contains(out, "PAUSED: 0 running") {
		t.Fatalf("pause --wait: %d %q %q", code, out, errOut)
	}
	if state, running := get(); state != "PAUSED" || running != 0 {
		t.Fatalf("after pause --wait: %s with %v running", state, running)
	}

	code, out, errOut = s.cli(t, "backfill", "resume", id, "--wait")
	if code != 0 || !strings.Contains(out, "RUNNING") {
		t.Fatalf("resume --wait: %d %q %q", code, out, errOut)
	}
	if state, _ := get(); state != "RUNNING" && state != "SUCCEEDED" {
		t.Fatalf("after resume --wait: %s", state)
	}

	code, out, errOut = s.cli(t, "backfill", "cancel", id, "--wait")
	if code != 0 || !strings.Contains(out, "CANCELED") {
		t.Fatalf("cancel --wait: %d %q %q", code, out, errOut)
	}
	if state, running := get(); state != "CANCELED" || running != 0 {
		t.Fatalf("after cancel --wait: %s with %v running", state, running)
	}
	// --wait on a refused transition is the server's 409, without waiting.
	if code, _, errOut = s.cli(t, "backfill", "pause", id, "--wait"); code != cli.ExitUsage || !strings.Contains(errOut, "409") {
		t.Fatalf("pause --wait of a canceled backfill: %d %q", code, errOut)
	}
}

// A wrong number of arguments or a flag value of the wrong type is a usage
// error (exit 2) that says what is wrong in the user's words and how to do
// it right: the command's usage line or the nearest flag, and its --help.
func TestCLIUsageErrorsSayHowToFix(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"taint", "raw.events"}, []string{"accepts 2 arg(s), received 1", "usage: tessera taint ASSET PARTITION", `see "tessera taint --help"`}},
		{[]string{"workspace", "validate"}, []string{"usage: tessera workspace validate FILE", `"tessera workspace validate --help"`}},
		{[]string{"backfill", "get"}, []string{"usage: tessera backfill get ID"}},
		{[]string{"status", "extra"}, []string{`tessera status takes no arguments, got "extra"`, "usage: tessera status"}},
		{[]string{"migrate", "extra"}, []string{`tessera migrate takes no arguments, got "extra"`}},
		{[]string{"backfill", "preview", "t.daily", "--missing", "--chunk-size", "ten"}, []string{`--chunk-size "ten" is not a whole number`, `see "tessera backfill preview --help"`}},
		{[]string{"backfill", "preview", "t.daily", "--missing", "--chunk-size", "99999999999999999999"}, []string{`--chunk-size "99999999999999999999" is out of range`}},
		{[]string{"backfill", "create", "t.daily", "--missing", "--wait=maybe"}, []string{`--wait "maybe" is not true or false`}},
		{[]string{"backfill", "preview", "t.daily", "--chunksize", "3"}, []string{"unknown flag: --chunksize (did you mean --chunk-size?)", `see "tessera backfill preview --help"`}},
		{[]string{"backfill", "create", "t.daily", "--partition"}, []string{"flag needs an argument: --partition", `see "tessera backfill create --help"`}},
		{[]string{"serve", "--lease-ttl", "5"}, []string{`--lease-ttl "5" is not a duration such as 30s, 15m or 2h`}},
		{[]string{"backfill", "list", "--limit", "1.5"}, []string{`--limit "1.5" is not a whole number`, `see "tessera backfill list --help"`}},
		// serve's on/off flags take yes/no and on/off too, and their value
		// only after "=": a value after a space is an argument.
		{[]string{"serve", "--trust-proxy=maybe"}, []string{`--trust-proxy "maybe" is not 1/0, true/false, yes/no or on/off`}},
		{[]string{"serve", "--trust-proxy", "yes"}, []string{`tessera serve takes no arguments, got "yes"`, `an on/off flag takes its value after "=": --trust-proxy=yes`}},
		{[]string{"serve", "--anonymous-viewer", "off"}, []string{`--anonymous-viewer=off`}},
		{[]string{"status", "--json", "true"}, []string{`tessera status takes no arguments, got "true"`, `--json=true`}},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q, stdout %q)", tc.args, code, errOut, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if strings.Contains(errOut, "strconv.") {
			t.Errorf("%v: Go internals in %q", tc.args, errOut)
		}
	}
}
