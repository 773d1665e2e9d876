package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBackfillWaitFollowsALaunchedBackfill: a backfill launched without
// --wait (or by a schedule, a sensor, the page) could only be followed by
// polling `backfill get`; `tessera backfill wait ID` follows it to its end
// as `create --wait` does, exit 0 when it succeeded and 1 when it failed,
// and on one already over shows no made-up "0/s" rate.
func TestBackfillWaitFollowsALaunchedBackfill(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.regions:
    partitions: {static: [eu, us, wonka]}
    retries: {max_attempts: 1}
    executor: {demo: {duration: 300ms, fail_keys: [wonka]}}
`)
	create := func(keys string) string {
		t.Helper()
		code, out, errOut := s.cli(t, "backfill", "create", "t.regions", "--partitions", keys, "--json")
		var b struct {
			ID string `json:"id"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.ID == "" {
			t.Fatalf("create %s: %d %q %q", keys, code, out, errOut)
		}
		return b.ID
	}
	ok := create("eu,us")
	code, out, errOut := s.cli(t, "backfill", "wait", ok)
	if code != 0 || !strings.Contains(out, "backfill "+ok+" SUCCEEDED") || !strings.Contains(out, "2/2 done, 0 failed") {
		t.Fatalf("wait of a succeeding backfill: %d %q %q", code, out, errOut)
	}
	bad := create("wonka")
	code, out, errOut = s.cli(t, "backfill", "wait", bad)
	if code != 1 || !strings.Contains(out, "backfill "+bad+" FAILED") || !strings.Contains(errOut, "ended FAILED: 1 partition failed") {
		t.Fatalf("wait of a failing backfill: %d %q %q", code, out, errOut)
	}
	// Already over: its line, without a rate measured over no time.
	code, out, errOut = s.cli(t, "backfill", "wait", ok)
	if code != 0 || !strings.Contains(out, "2/2 done, 0 failed, SUCCEEDED") || strings.Contains(out, "/s") {
		t.Fatalf("wait of a finished backfill: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = s.cli(t, "backfill", "wait", ok, "--json"); code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("wait --json: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = s.cli(t, "backfill", "wait"); code != 2 || !strings.Contains(errOut, "usage: tessera backfill wait ID") {
		t.Fatalf("wait without an id: %d %q", code, errOut)
	}
}
