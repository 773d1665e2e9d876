package cli_test

import (
	"encoding/json"
	"regexp"
	"strconv"
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

// TestBackfillChunksSaysWhichChunksHaveNoRun: a canceled backfill's
// `backfill chunks` listed only the chunks that got a run (6) while
// `backfill get` and the page count all of its chunks (24: 6 succeeded,
// 18 canceled), with no word of the others; now a line says how many never
// got a run and why.
func TestBackfillChunksSaysWhichChunksHaveNoRun(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.slow:
    partitions: {static: [a, b, c, d, e, f]}
    executor: {demo: {duration: 2s}}
`)
	code, out, errOut := s.cli(t, "backfill", "create", "t.slow", "--partitions", "a,b,c,d,e,f", "--concurrency", "1", "--json")
	var b struct {
		ID string `json:"id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.ID == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "backfill", "cancel", b.ID, "--terminate", "--wait"); code != 0 {
		t.Fatalf("cancel: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.cli(t, "backfill", "chunks", b.ID)
	m := regexp.MustCompile(`\n\((\d+) of its 6 chunks never got a run: the backfill ended CANCELED before they were planned\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("chunks of a canceled backfill: %d %q %q", code, out, errOut)
	}
	rows := strings.Count(out, "\n") - 2 // the header and the note
	if n, _ := strconv.Atoi(m[1]); n+rows != 6 || n == 0 {
		t.Fatalf("%d chunk runs listed and %d without a run, want 6 in all:\n%s", rows, n, out)
	}
	// Filtered, the note would be about other chunks: none.
	if code, out, _ = s.cli(t, "backfill", "chunks", b.ID, "--state", "canceled,succeeded"); code != 0 || strings.Contains(out, "never got a run") {
		t.Fatalf("chunks --state: %d %q", code, out)
	}
}
