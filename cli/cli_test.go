package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/cli"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs a command that must succeed (the test fails with its
// arguments and what it said otherwise) and returns its standard output.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d %q", args, code, errOut)
	}
	return out
}

// userToken adds the user of role to the database at dbPath (its password
// in the file pw) and returns a new API token of theirs named name.
func userToken(t *testing.T, dbPath, pw, user, role, name string) string {
	t.Helper()
	mustRun(t, "user", "add", user, "--role", role, "--password-file", pw, "--db", dbPath)
	return strings.TrimSpace(mustRun(t, "token", "create", "--user", user, "--name", name, "--db", dbPath))
}

// noConfig leaves the CLI in this test nothing but its flags: no config
// file (TESSERA_CONFIG names one that does not exist), no TESSERA_URL, no
// TESSERA_TOKEN.
func noConfig(t *testing.T) {
	t.Setenv("TESSERA_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("TESSERA_URL", "")
	t.Setenv("TESSERA_TOKEN", "")
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkspaceValidate(t *testing.T) {
	t.Parallel()
	good := writeFile(t, "good.yaml", string(catalog.DefaultWorkspaceYAML))
	code, out, _ := run(t, "workspace", "validate", good)
	if code != 0 || !strings.Contains(out, "ok, 6 assets, 3 pools, 1 schedule, 1 sensor") {
		t.Fatalf("valid workspace: exit %d, %q", code, out)
	}
	bad := writeFile(t, "bad.yaml", `assets:
  a.one:
    partitions: {daily: {start: 2025-02-01, end: 2025-01-01}}
    executor: {demo: {duration: 1s}}
  a.two:
    partitions: {fortnightly: {start: 2025-01-01}}
    executor: {demo: {duration: 1s}}
  a.three:
    partitions: {daily: {start: 2025-01-01, timezone: Mars/Olympus}}
    deps: [{asset: a.ghost}]
    executor: {demo: {duration: 1s}}
`)
	code, _, errOut := run(t, "workspace", "validate", bad)
	if code != 2 {
		t.Fatalf("invalid workspace: exit %d", code)
	}
	for _, want := range []string{"bad.yaml:3:", "bad.yaml:6:", "bad.yaml:9:", "bad.yaml:10:", "fortnightly", "Mars/Olympus", "a.ghost", "4 problems"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate output lacks %q:\n%s", want, errOut)
		}
	}
	if code, _, errOut := run(t, "workspace", "validate", filepath.Join(t.TempDir(), "missing.yaml")); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("missing file: exit %d %q", code, errOut)
	}
}

func TestServeRefusesBadInputWithExitCode2(t *testing.T) {
	t.Parallel()
	bad := writeFile(t, "bad.yaml", "assets:\n  x:\n    partitions: {daily: {start: nope}}\n    executor: {demo: {duration: 1s}}\n")
	dbPath := filepath.Join(t.TempDir(), "t.db")
	cases := [][]string{
		{"serve", "--db", dbPath, "--addr", "127.0.0.1:0", "--workspace", bad},
		{"serve", "--db", dbPath, "--addr", "no-port"},
		{"serve", "--db", dbPath, "--seed-demo", "sometimes"},
		{"serve", "--frobnicate"},
		{"serve", "extra-arg"},
	}
	for _, args := range cases {
		code, _, errOut := run(t, args...)
		if code != 2 || !strings.HasPrefix(errOut, "error: ") {
			t.Fatalf("%v: exit %d %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused serve created the database")
	}
}

func TestBenchGridPrintsOneJSONLine(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "bench", "grid", "--partitions", "3000", "--requests", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %q", out)
	}
	for _, k := range []string{"bench", "partitions", "p50_ms", "p95_ms", "html_bytes"} {
		if _, ok := res[k]; !ok {
			t.Fatalf("result lacks %s: %v", k, res)
		}
	}
	if res["partitions"].(float64) != 3000 || res["html_bytes"].(float64) < 1000 {
		t.Fatalf("result %v", res)
	}
	if code, _, _ := run(t, "bench", "grid", "--partitions", "0"); code != 2 {
		t.Fatalf("--partitions 0: exit %d", code)
	}
}

// TestBenchFlagsOutOfRangeAreRefused: a bench flag outside its bounds is a
// usage error (exit 2) naming the flag, its bounds and the value given,
// before anything runs.
func TestBenchFlagsOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "grid", "--partitions", "0"}, "--partitions must be between 1 and 10000000, got 0"},
		{[]string{"bench", "pages", "--partitions", "10000001"}, "--partitions must be between 1 and 10000000, got 10000001"},
		{[]string{"bench", "backfill", "--partitions", "0"}, "--partitions must be between 1 and 10000000, got 0"},
		{[]string{"bench", "backfill", "--chunk-size", "100001"}, "--chunk-size must be between 1 and 100000, got 100001"},
		{[]string{"bench", "mixed", "--concurrency", "0"}, "--concurrency must be between 1 and "},
		{[]string{"bench", "backfill", "--instances", "17"}, "--instances must be between 1 and 16, got 17"},
		{[]string{"bench", "keys", "--keys", "0"}, "--keys must be between 1 and 1000000, got 0"},
		{[]string{"bench", "keys", "--rounds", "101"}, "--rounds must be between 1 and 100, got 101"},
		{[]string{"bench", "login", "--concurrency", "10001"}, "--concurrency must be between 1 and 10000, got 10001"},
		{[]string{"bench", "mixed", "--readers", "0"}, "--readers must be between 1 and 1000, got 0"},
		{[]string{"bench", "mixed", "--rounds", "0"}, "--rounds must be between 1 and 100, got 0"},
		{[]string{"bench", "automation", "--schedules", "100001"}, "--schedules must be between 1 and 100000, got 100001"},
	} {
		if code, _, errOut := run(t, tc.args...); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.db")
	code, out, errOut := run(t, "migrate", "--db", p)
	if code != 0 || !strings.Contains(out, "schema version") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	if code, _, errOut := run(t, "healthcheck", "--addr", "127.0.0.1:1"); code != 3 || !strings.Contains(errOut, "not reachable") {
		t.Fatalf("no server: exit %d %q", code, errOut)
	}
	if code, _, _ := run(t, "healthcheck", "--addr", "nonsense"); code != 2 {
		t.Fatalf("bad addr: exit %d", code)
	}
}
