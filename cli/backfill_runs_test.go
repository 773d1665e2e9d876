package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// TestCLIBackfillRuns: `backfill runs` lists the runs of every backfill
// newest first with the runs page's filters, pages with --limit, and words
// a bad filter as its flag.
func TestCLIBackfillRuns(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServer(t)
	code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-04", "--chunk-size", "1", "--wait")
	if code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
	if code, out, errOut = s.cli(t, "backfill", "create", "t.flaky", "--partitions", "2025-03-01", "--wait"); code != cli.ExitFailed {
		t.Fatalf("create t.flaky: %d %q %q", code, out, errOut)
	}

	code, out, errOut = s.cli(t, "backfill", "runs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "RUN ") || !strings.Contains(lines[1], "t.flaky") || !strings.Contains(lines[1], "failed") {
		t.Fatalf("backfill runs: %d %q %q", code, out, errOut)
	}
	var runs struct {
		Runs []map[string]any `json:"runs"`
		Next string           `json:"next_cursor"`
	}
	if code, out, _ = s.cli(t, "backfill", "runs", "--backfill", id, "--state", "succeeded", "--json"); code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs.Runs) != 4 || runs.Next != "" {
		t.Fatalf("--backfill --state --json: %d %q", code, out)
	}
	for _, r := range runs.Runs {
		if r["backfill_id"] != id || r["state"] != "succeeded" || r["duration_ms"] == nil {
			t.Errorf("run %v", r)
		}
	}
	if code, out, _ = s.cli(t, "backfill", "runs", "--asset", "t.daily", "--limit", "2"); code != 0 || strings.Count(out, "t.daily") != 2 ||
		!strings.Contains(out, "(the newest 2 runs; older ones left out: --limit N shows more, --all shows every run)") {
		t.Errorf("--limit 2: %d %q", code, out)
	}
	if code, out, _ = s.cli(t, "backfill", "runs", "--state", "canceled"); code != 0 || strings.TrimSpace(out) != "no runs match" {
		t.Errorf("no match: %d %q", code, out)
	}
	for flag, want := range map[string]string{
		"--from":     `--from must be a time, got "yesterday"; use RFC 3339`,
		"--state":    `--state: unknown run state "yesterday"; use queued, running, succeeded, failed, canceled`,
		"--backfill": `--backfill: no backfill "yesterday"`,
	} {
		if code, _, errOut = s.cli(t, "backfill", "runs", flag, "yesterday"); code != cli.ExitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s yesterday: exit %d, %q; want %q", flag, code, errOut, want)
		}
	}
}
