package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// TestRetryFailedFlags: retry-failed takes --expected-state-version,
// --chunk-size and --concurrency, as the API's expected_state_version,
// chunk_size and max_concurrent_runs; the server checks a value given
// (errors name the flag), and a setting left out keeps the parent's.
func TestRetryFailedFlags(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, clientWorkspace, func(t *testing.T, s server) {
		code, out, errOut := s.cli(t, "backfill", "create", "t.flaky", "--start", "2025-03-01", "--end", "2025-03-04", "--concurrency", "2", "--wait")
		if code != cli.ExitFailed {
			t.Fatalf("create --wait of t.flaky: %d %q %q", code, out, errOut)
		}
		parent := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		var p struct {
			StateVersion int64 `json:"state_version"`
		}
		if code, out, _ = s.cli(t, "backfill", "get", parent, "--json"); code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.StateVersion < 1 {
			t.Fatalf("get: %d %q", code, out)
		}
		backfills := func() int {
			t.Helper()
			code, out, _ := s.cli(t, "backfill", "list", "--all", "--json")
			var l struct{ Backfills []json.RawMessage }
			if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
				t.Fatalf("list: %d %q", code, out)
			}
			return len(l.Backfills)
		}

		// Refused, and no child made.
		for _, tc := range []struct {
			args []string
			msg  string
		}{
			{[]string{"--expected-state-version", fmt.Sprint(p.StateVersion + 1)}, "409"},
			{[]string{"--expected-state-version", "0"}, "--expected-state-version must be a positive number"},
			{[]string{"--chunk-size", "0"}, "--chunk-size must be between 1 and 100000"},
			{[]string{"--concurrency", "0"}, "--concurrency must be between 1 and"},
			{[]string{"--concurrency", "-3"}, "--concurrency must be between 1 and"},
		} {
			code, _, errOut := s.cli(t, append([]string{"backfill", "retry-failed", parent}, tc.args...)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.msg) {
				t.Errorf("retry-failed %v: exit %d %q, want 2 with %q", tc.args, code, errOut, tc.msg)
			}
		}
		if n := backfills(); n != 1 {
			t.Fatalf("refused retries made backfills: %d in all", n)
		}

		var child struct {
			ID                string  `json:"id"`
			ParentBackfillID  *string `json:"parent_backfill_id"`
			ChunkSize         int64   `json:"chunk_size"`
			MaxConcurrentRuns int64   `json:"max_concurrent_runs"`
			TotalPartitions   int64   `json:"total_partitions"`
			TotalChunks       int64   `json:"total_chunks"`
		}
		code, out, errOut = s.cli(t, "backfill", "retry-failed", parent, "--expected-state-version", fmt.Sprint(p.StateVersion),
			"--chunk-size", "2", "--concurrency", "3", "--request-id", "r1", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &child) != nil || child.ParentBackfillID == nil || *child.ParentBackfillID != parent ||
			child.ChunkSize != 2 || child.MaxConcurrentRuns != 3 || child.TotalPartitions != 4 || child.TotalChunks != 2 {
			t.Fatalf("retry-failed with settings: %d %q %q", code, out, errOut)
		}
		// Without them: the parent's (chunks of 1, at most 2 at once). A
		// parent is retried again only once its retry ended (t.flaky fails
		// it too; while it runs, another retry is refused: see
		// TestRetryFailedRefusesWhatARetryDoesOrDid).
		if code, out, errOut = s.cli(t, "backfill", "wait", child.ID); code != cli.ExitFailed {
			t.Fatalf("wait for the first retry: %d %q %q", code, out, errOut)
		}
		code, out, errOut = s.cli(t, "backfill", "retry-failed", parent, "--request-id", "r2", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &child) != nil || child.ChunkSize != 1 || child.MaxConcurrentRuns != 2 || child.TotalChunks != 4 {
			t.Fatalf("retry-failed without settings: %d %q %q", code, out, errOut)
		}

		// The other steering commands check a value given too, instead of
		// skipping the check for 0 or a negative number.
		code, _, errOut = s.cli(t, "backfill", "pause", child.ID, "--expected-state-version", "-1")
		if code != cli.ExitUsage || !strings.Contains(errOut, "--expected-state-version must be a positive number") {
			t.Fatalf("pause --expected-state-version -1: %d %q", code, errOut)
		}
	})
}
