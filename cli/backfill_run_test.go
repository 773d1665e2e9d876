package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// TestBackfillRunRejectsNegativeAttempt: 'backfill run --attempt -1' is a
// usage error (exit 2) before any request; it used to show the latest
// attempt's log as if it had been asked for.
func TestBackfillRunRejectsNegativeAttempt(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	code, _, errOut := run(t, "backfill", "run", "run_x", "--attempt", "-1", "--server", "http://127.0.0.1:1", "--token", "tsr_x")
	if code != 2 || !strings.Contains(errOut, "--attempt") {
		t.Fatalf("--attempt -1: exit %d, %q", code, errOut)
	}
}

// A count flag out of range names the flag and the value given, as every
// other one does (`backfill run --partitions -1 --log-lines 5` said
// "--partitions and --log-lines must be 0 or more"; `asset partitions
// --limit 0` said "--limit must be at least 1" without the value). The
// check comes before any request.
func TestCountFlagsNameTheFlagAndValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backfill", "run", "run_x", "--partitions", "-1"}, "--partitions must be 0 or more, got -1"},
		{[]string{"backfill", "run", "run_x", "--log-lines", "-5"}, "--log-lines must be 0 or more, got -5"},
		{[]string{"asset", "partitions", "raw.events", "--limit", "0"}, "--limit must be 1 or more, got 0"},
	} {
		code, out, errOut := run(t, append(tc.args, "--server", "http://127.0.0.1:1", "--token", "tsr_x")...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q %q, want 2 saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestBackfillRunAttemptDurationReadsLikeThePage: the attempts table of
// `tessera backfill run` wrote a Go duration ("1.104s", "1h2m3.5s") while
// the run page and `tessera backfill runs` write "1.1 s", "1 h 2 min".
func TestBackfillRunAttemptDurationReadsLikeThePage(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.slow:
    partitions: {static: [only]}
    executor: {demo: {duration: 1100ms}}
`)
	if code, out, errOut := s.cli(t, "backfill", "create", "t.slow", "--partitions", "only", "--wait"); code != 0 {
		t.Fatalf("create --wait: %d %q %q", code, out, errOut)
	}
	code, out, errOut := s.cli(t, "backfill", "runs", "--json")
	var runs struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs --json: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.cli(t, "backfill", "run", runs.Runs[0].ID)
	if code != 0 {
		t.Fatalf("run: %d %q %q", code, out, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "1 ") {
			row = l
		}
	}
	if !regexp.MustCompile(`\ssucceeded\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+1\.\d s\s*$`).MatchString(row) {
		t.Errorf("attempt 1's row does not say its duration as the page does (\"1.1 s\"): %q\n%s", row, out)
	}
}

// TestBackfillRunLogHeadingCountsLines: the log's heading said "last 1
// lines" for a one-line log, and "last 4 lines" when the whole log was
// shown; it now says "1 line" or, when --log-lines cut it, how to see more.
func TestBackfillRunLogHeadingCountsLines(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.one:
    partitions: {static: [only]}
    executor: {command: [sh, -c, 'echo "built $TESSERA_PARTITIONS"']}
  t.many:
    partitions: {static: [only]}
    executor: {command: [sh, -c, 'echo one; echo two; echo three']}
`)
	runOf := func(asset string) string {
		t.Helper()
		if code, out, errOut := s.cli(t, "backfill", "create", asset, "--partitions", "only", "--wait"); code != 0 {
			t.Fatalf("create %s: %d %q %q", asset, code, out, errOut)
		}
		code, out, errOut := s.cli(t, "backfill", "runs", "--asset", asset, "--json")
		var runs struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs.Runs) == 0 {
			t.Fatalf("runs --json: %d %q %q", code, out, errOut)
		}
		return runs.Runs[0].ID // newest first: the one just created
	}
	for _, c := range []struct {
		asset string
		args  []string
		want  string
	}{
		{"t.one", nil, "\nlog of attempt 1 (1 line):\n  built only\n"},
		{"t.many", nil, "\nlog of attempt 1 (3 lines):\n  one\n  two\n  three\n"},
		{"t.many", []string{"--log-lines", "1"}, "\nlog (last 1 line of attempt 1; --log-lines N shows more):\n  three\n"},
	} {
		id := runOf(c.asset)
		code, out, errOut := s.cli(t, append([]string{"backfill", "run", id}, c.args...)...)
		if code != 0 || !strings.HasSuffix(out, c.want) {
			t.Errorf("run of %s %v: %d %q %q, want it to end with %q", c.asset, c.args, code, out, errOut, c.want)
		}
	}
}

// TestBackfillRunAttemptUnderWaySaysHowLongSoFar: an attempt under way had
// "-" as its DURATION, where the run page and `backfill runs` show how long
// it has run so far.
func TestBackfillRunAttemptUnderWaySaysHowLongSoFar(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.slow:
    partitions: {static: [only]}
    executor: {demo: {duration: 5s}}
`)
	if code, out, errOut := s.cli(t, "backfill", "create", "t.slow", "--partitions", "only"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	var id string
	testkit.Eventually(t, 30*time.Second, "the run to start", func() bool {
		_, out, _ := s.cli(t, "backfill", "runs", "--state", "running", "--json")
		var runs struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		if json.Unmarshal([]byte(out), &runs) == nil && len(runs.Runs) == 1 {
			id = runs.Runs[0].ID
		}
		return id != ""
	})
	code, out, errOut := s.cli(t, "backfill", "run", id)
	if code != 0 || !regexp.MustCompile(`(?m)^1\s+running\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+(\d+ ms|\d+\.\d s) so far\s*$`).MatchString(out) {
		t.Fatalf("run under way: %d %q %q, want its attempt's duration so far", code, out, errOut)
	}
}
