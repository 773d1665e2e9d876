package cli_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// tessera bench backfill --db postgres://… --instances 3 shares the
// backfill between three engines on one PostgreSQL database and prints the
// usual JSON line with "instances"; the executor sleep:DURATION works on
// each chunk that long. Bad flags are refused before anything runs, and a
// database that holds a workspace is refused untouched.
func TestBenchBackfillInstancesOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	out, err := exec.Command(tesseraBin, "bench", "backfill", "--db", url, "--instances", "3", "--partitions", "600", "--chunk-size", "10",
		"--concurrency", "4", "--executor", "sleep:5ms").Output()
	if err != nil {
		t.Fatalf("bench backfill: %v\n%s", err, out)
	}
	var res struct {
		Bench       string
		Partitions  int64
		Chunks      int64
		Concurrency int
		Executor    string
		Instances   int
		State       string
		RunsPerS    float64 `json:"runs_per_s"`
	}
	line := strings.TrimSpace(string(out))
	if strings.Count(line, "\n") != 0 || json.Unmarshal([]byte(line), &res) != nil {
		t.Fatalf("bench backfill printed %q, not one JSON line", out)
	}
	if res.Bench != "backfill" || res.Partitions != 600 || res.Chunks != 60 || res.Instances != 3 || res.Executor != "sleep:5ms" ||
		res.State != "SUCCEEDED" || res.RunsPerS <= 0 {
		t.Fatalf("bench backfill: %s", line)
	}
	t.Log(line)
	store := teststore.OpenAt(t, url)
	var owners int
	if err := store.RawReader().Get(&owners, `SELECT COUNT(DISTINCT owner) FROM attempts`); err != nil || owners < 2 {
		t.Errorf("the attempts had %d owners (%v), want the instances to share them", owners, err)
	}

	// A database holding a workspace is refused, and nothing is written.
	used := pgtest.URL(t)
	other, _, _ := teststore.WithWorkspaceAt(t, used, "assets:\n  mine.daily:\n    partitions: {daily: {start: 2025-01-01}}\n    executor: {demo: {duration: 1ms}}\n", time.Now())
	msg, err := exec.Command(tesseraBin, "bench", "backfill", "--db", used, "--partitions", "10").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(msg), "the database holds a workspace already (1 asset); give the benchmark an empty database") {
		t.Errorf("bench backfill on a database in use: %v %q", err, msg)
	}
	var assets, backfills int
	other.RawReader().Get(&assets, `SELECT COUNT(*) FROM assets`)
	other.RawReader().Get(&backfills, `SELECT COUNT(*) FROM backfills`)
	if assets != 1 || backfills != 0 {
		t.Errorf("the refused bench wrote: %d assets, %d backfills", assets, backfills)
	}

	for _, c := range []struct{ args, want string }{
		{"--instances 3", "--instances 3 needs --db postgres://…"},
		{"--instances 0 --db " + url, "--instances must be between 1 and 16, got 0"},
		{"--executor sleep:x", `--executor sleep:DURATION needs a duration between 1ns and 1h such as sleep:50ms, got "sleep:x"`},
		{"--executor fast", `--executor must be noop or sleep:DURATION (such as sleep:50ms), got "fast"`},
		{"--db mysql://h/x", `Tessera does not speak "mysql://" databases`},
		{"--db data/x.db", "--db of bench backfill must be a PostgreSQL URL"},
		{"--db=", "--db of bench backfill is empty: give a PostgreSQL URL (postgres://user@host:5432/dbname), or leave --db out"},
	} {
		out, err := exec.Command(tesseraBin, append([]string{"bench", "backfill", "--partitions", "10"}, strings.Fields(c.args)...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("bench backfill %s: %v %q, want exit 2 and %q", c.args, err, out, c.want)
		}
	}
}
