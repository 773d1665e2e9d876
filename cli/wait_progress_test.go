package cli_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// retryWorkspace: t.retry's partition 2025-01-03 fails its first attempt
// and succeeds on the retry, 4 s later; the others succeed at once. Each
// run of t.slow takes 5 s.
var retryWorkspace = testkit.Assets(
	testkit.Asset("t.retry", "{daily: {start: 2025-01-01}}", "retries: {max_attempts: 2, backoff: 4s}", `executor:
  command: [sh, -c, 'case "$TESSERA_PARTITIONS" in 2025-01-03) [ "$TESSERA_ATTEMPT" = 1 ] && exit 1;; esac; exit 0']`),
	testkit.Asset("t.slow", "{daily: {start: 2025-01-01}}", `executor:
  command: [sleep, "5"]`),
)

// TestBackfillWaitShowsRetryBackoff: while a chunk waits out its retry's
// backoff, create --wait says until when and shows no ETA (it used to
// print an ETA that grew with the wait), and when its output is not a
// terminal it prints a line only when the line's content changed (it used
// to repeat the same line every 2 s).
func TestBackfillWaitShowsRetryBackoff(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, retryWorkspace, func(t *testing.T, s server) {
		t0 := time.Now()
		code, out, errOut := s.cli(t, "backfill", "create", "t.retry", "--start", "2025-01-01", "--end", "2025-01-04", "--wait")
		t1 := time.Now()
		if code != 0 || !strings.Contains(out, "4/4 done") || !strings.Contains(out, "SUCCEEDED") {
			t.Fatalf("create --wait: %d %q %q", code, out, errOut)
		}
		if t1.Sub(t0) < 4*time.Second {
			t.Fatalf("the backfill took %s: the retry's 4 s backoff did not happen", t1.Sub(t0))
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		waitRe := regexp.MustCompile(`, 1 run waiting for retry until (\d\d:\d\d:\d\d) UTC \(in \d+ s\), RUNNING$`)
		waiting := 0
		for i, l := range lines {
			if i > 0 && l == lines[i-1] {
				t.Errorf("line %d repeats the line before it:\n%s", i+1, out)
			}
			if !strings.Contains(l, "waiting for retry") {
				continue
			}
			waiting++
			if strings.Contains(l, "ETA") {
				t.Errorf("a line shows an ETA while the run waits for its retry: %q", l)
			}
			m := waitRe.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("waiting line %q does not say until when the run waits", l)
				continue
			}
			// The retry starts 4 s after the first attempt failed, within the wait.
			ok := false
			for at := t0.Add(3 * time.Second); !at.After(t1.Add(time.Second)); at = at.Add(time.Second) {
				ok = ok || at.UTC().Format("15:04:05") == m[1]
			}
			if !ok {
				t.Errorf("retry time %s is not 4 s after the start (%s … %s)", m[1], t0.UTC().Format("15:04:05"), t1.UTC().Format("15:04:05"))
			}
		}
		if waiting == 0 {
			t.Fatalf("no line says a run waits for its retry:\n%s", out)
		}
		// Plain output: a line when something changed, not one per poll or every 2 s.
		if len(lines) > 8 {
			t.Errorf("%d lines for a 4-partition backfill:\n%s", len(lines), out)
		}
		if last := lines[len(lines)-2]; !strings.Contains(last, "[##############################] 4/4 done, 0 failed") || strings.Contains(last, "ETA") {
			t.Errorf("last progress line %q", last)
		}

		// A run that takes 5 s: nothing changes while it runs, so nothing is
		// printed meanwhile (no line every 2 s saying the same).
		code, out, errOut = s.cli(t, "backfill", "create", "t.slow", "--partition", "2025-01-01", "--wait")
		if code != 0 || !strings.Contains(out, "1/1 done") {
			t.Fatalf("create --wait of a slow run: %d %q %q", code, out, errOut)
		}
		lines = strings.Split(strings.TrimSpace(out), "\n")
		for i, l := range lines {
			if i > 0 && l == lines[i-1] {
				t.Errorf("line %d repeats the line before it:\n%s", i+1, out)
			}
		}
		if running := strings.Count(out, "0/1 done, 0 failed, 0/s, ETA unknown yet, RUNNING"); running != 1 || len(lines) > 4 {
			t.Errorf("want one line while the run runs (%d) and 4 lines at most (%d):\n%s", running, len(lines), out)
		}
	})
}
