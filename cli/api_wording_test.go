package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// TestServerErrorsInCLIWords: the server's errors, written for API clients,
// reach the CLI user in the CLI's words: the flag instead of the JSON field
// (--attempt, not "attempt"; no "(field assets[0])"), the CLI command instead
// of the endpoint ("tessera backfill get ID shows …", not "GET
// /api/v1/backfills/…").
func TestServerErrorsInCLIWords(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		code, out, errOut := s.cli(t, "backfill", "create", "t.flaky", "--partitions", "2025-03-01,2025-03-02", "--wait")
		if code != cli.ExitFailed {
			t.Fatalf("create --wait of t.flaky: %d %q %q", code, out, errOut)
		}
		id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		var b struct {
			StateVersion int64 `json:"state_version"`
		}
		if code, out, _ = s.cli(t, "backfill", "get", id, "--json"); code != 0 || json.Unmarshal([]byte(out), &b) != nil {
			t.Fatalf("get: %d %q", code, out)
		}
		var chunks struct{ Chunks []map[string]any }
		if code, out, _ = s.cli(t, "backfill", "chunks", id, "--json"); code != 0 || json.Unmarshal([]byte(out), &chunks) != nil || len(chunks.Chunks) == 0 {
			t.Fatalf("chunks: %d %q", code, out)
		}
		runID := chunks.Chunks[0]["id"].(string)
		if code, _, errOut = s.cli(t, "backfill", "retry-failed", id, "--request-id", "r1", "--chunk-size", "2"); code != 0 {
			t.Fatalf("retry-failed: %d %q", code, errOut)
		}
		stale := fmt.Sprint(b.StateVersion + 1)

		// admin marks a command run with the admin's token.
		const admin = "as-admin"
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"backfill", "pause", id, "--expected-state-version", stale}, cli.ExitUsage,
				"--expected-state-version: backfill " + id + " is at version " + fmt.Sprint(b.StateVersion) + " (state FAILED), not " + stale +
					": it changed since you read it; `tessera backfill get " + id + "` shows its state and version; if the action still applies, pass that version with --expected-state-version"},
			{[]string{"backfill", "retry-failed", id, "--expected-state-version", stale}, cli.ExitUsage,
				"`tessera backfill get " + id + "` shows its state and version; if the action still applies, pass that version with --expected-state-version"},
			{[]string{"backfill", "cancel", id, "--expected-state-version", "0"}, cli.ExitUsage,
				"--expected-state-version must be a positive number, got 0; pass the version `tessera backfill get ID` shows, or leave --expected-state-version out to skip the check"},
			{[]string{"backfill", "run", "run_nope"}, cli.ExitUsage,
				"run \"run_nope\" not found; a backfill's runs are the chunks listed by `tessera backfill chunks ID` (the RUN column; list backfills with `tessera backfill list`)"},
			{[]string{"backfill", "run", runID, "--attempt", "9"}, cli.ExitUsage, "--attempt must be the number of one of this run's attempts (1 to 1), got \"9\""},
			{[]string{"backfill", "create", "t.daily", "nope", "--start", "2025-01-01", "--end", "2025-01-02"}, cli.ExitUsage,
				"unknown asset \"nope\"; `tessera asset list` lists the declared assets\n"},
			{[]string{"backfill", "preview", "t.daily", "--failed"}, cli.ExitUsage,
				"the selection is empty: no partition of t.daily matches (chosen by --start/--end, --partition/--partitions/--partitions-file, --missing/--failed/--stale/--tainted and --dimension)"},
			{[]string{"backfill", "create", "t.daily", "--partitions", ","}, cli.ExitUsage,
				"--partition/--partitions/--partitions-file: the explicit key list is empty; give at least one key with --partition, --partitions or --partitions-file, or choose partitions with --start/--end or --missing/--failed/--stale/--tainted"},
			// Field names inside the text become flags too.
			{[]string{"backfill", "retry-failed", id, "--request-id", "r1", "--chunk-size", "3"}, cli.ExitUsage,
				"--request-id \"r1\" already created backfill "},
			{[]string{"backfill", "retry-failed", id, "--request-id", "r1", "--chunk-size", "3"}, cli.ExitUsage,
				"with --chunk-size 2 and --concurrency 4; send the same settings (or none) to get it again, or a new --request-id for another retry"},
			{[]string{"report", "nope", "2025-01-01"}, cli.ExitUsage,
				"item 0 (asset \"nope\", partition \"2025-01-01\"): unknown asset; `tessera asset list` lists the declared assets\n"},
			{[]string{"report", "t.daily", "2025-01-01", "--at", "2099-01-01T00:00:00Z"}, cli.ExitUsage, "--at: item 0"},
			{[]string{"report", "t.daily", "--watermark", "1999-01-01"}, cli.ExitUsage, "--watermark: \"1999-01-01\" is not a partition of t.daily"},
			{[]string{admin, "taint", "t.daily", "1999-01-01", "--reason", "x"}, cli.ExitUsage, "; `tessera asset partitions t.daily` lists its partitions\n"},
		} {
			var code int
			var errOut string
			if tc.args[0] == admin {
				code, _, errOut = run(t, append(tc.args[1:], "--server", s.URL, "--token", s.AdminToken)...)
			} else {
				code, _, errOut = s.cli(t, tc.args...)
			}
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, errOut, tc.code, tc.want)
			}
			for _, api := range []string{"/api/v1", "(field ", "state_version", "selector.", "retry_request_id", "chunk_size", "max_concurrent_runs", `{"type"`, "assets["} {
				if strings.Contains(errOut, api) {
					t.Errorf("%v: API wording %q in %q", tc.args, api, errOut)
				}
			}
		}
	})
}
