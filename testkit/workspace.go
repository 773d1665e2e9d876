package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// The workspace builders of teststore, for the tests that use testkit.
const Daily = teststore.Daily

var (
	Assets = teststore.Assets
	Asset  = teststore.Asset
)

// WithAssets starts a server (New) on a workspace of the given assets
// (Asset).
func WithAssets(t testing.TB, assets ...string) *Env {
	t.Helper()
	return New(t, Options{WorkspaceYAML: Assets(assets...)})
}

// Shell is the executor field of an asset (see Asset) that runs the shell
// command cmd (one line; YAML single-quoted, so without a ').
func Shell(cmd string) string {
	return "executor:\n  command: ['" + cmd + "']\n  shell: true"
}

// ThrottledWorkspace holds the daily asset t.daily (January 2025) in a
// pool, wh, that starts at most one run an hour: a backfill of it shows
// what its next chunk waits for.
var ThrottledWorkspace = `pools:
  wh: {max_concurrent_runs: 4, throttle: 1/h}
` + teststore.Assets(
	teststore.Asset("t.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "pool: wh"),
)

// Script writes the shell script name (body after a "#!/bin/sh" line) to
// a new temporary directory, executable, and returns its path: an
// evaluator or a command executor for a test workspace.
func Script(t testing.TB, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// FlagFile creates an empty file named name in a new temporary directory
// and returns its path: a test workspace's command fails while it exists,
// and the test removes it to let the command succeed.
func FlagFile(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// WithFlagFile starts a server (New) and its engine on the workspace
// wsFormat whose one %s (or %q) is the path of a new FlagFile: the
// workspace's command fails while the file exists. It returns the server
// and the file.
func WithFlagFile(t testing.TB, wsFormat string) (*Env, string) {
	t.Helper()
	flag := FlagFile(t, "fail")
	env := New(t, Options{WorkspaceYAML: fmt.Sprintf(wsFormat, flag)})
	env.StartEngine(t, jobs.Options{})
	return env, flag
}

// CounterEvaluator is a poll sensor's command that answers its cursor plus
// one (n) with a request of partition eu under run key k{n}, and logs
// "evaluated SENSOR at CURSOR" to stderr.
func CounterEvaluator(t testing.TB) string {
	t.Helper()
	return Script(t, "counter.sh", `c=${TESSERA_SENSOR_CURSOR:-0}; n=$((c+1))
echo "evaluated $TESSERA_SENSOR_NAME at $c" >&2
echo "{\"cursor\": \"$n\", \"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"k$n\"}]}"
`)
}

// SkipInRacePass is teststore.SkipInRacePass, for the packages that use
// testkit.
func SkipInRacePass(t testing.TB) {
	t.Helper()
	teststore.SkipInRacePass(t)
}

// UseWorkspaceFile writes yaml to a workspace file and makes it the file
// the server reloads (POST /admin/workspace/reload); it returns its path.
func (e *Env) UseWorkspaceFile(t testing.TB, yaml string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ws.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := *e.Handler.Workspace()
	cur.Path = file
	e.Handler.SetWorkspace(&cur)
	return file
}
