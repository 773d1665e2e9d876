package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestBackfillRangeWithOneBoundLeftOut: --end without --start (or a status
// filter with --end) begins at the asset's first partition. The CLI sent
// the flag it was not given as "start": "", which the API now refuses (an
// empty bound is a client's unset variable); it leaves it out instead.
func TestBackfillRangeWithOneBoundLeftOut(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServer(t)
	for _, args := range [][]string{
		{"backfill", "preview", "t.daily", "--end", "2025-01-03"},
		{"backfill", "preview", "t.daily", "--missing", "--end", "2025-01-03"},
	} {
		code, out, errOut := s.cli(t, args...)
		if code != 0 || !regexp.MustCompile(`(?m)^partitions +3$`).MatchString(out) {
			t.Errorf("%v: exit %d %q %q, want the 3 partitions up to 2025-01-03", args, code, out, errOut)
		}
	}
}

// TestBackfillCreatePriorityIsBounded: --priority outside -1000..1000 (the
// bounds of the API and of schedules and sensors) is a usage error naming
// the range and the value, before any request: nothing is created. The
// bounds themselves are taken.
func TestBackfillCreatePriorityIsBounded(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServer(t)
	for _, p := range []string{"1001", "-1001", "9223372036854775807"} {
		code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--priority", p)
		if code != 2 || out != "" || !strings.Contains(errOut, "--priority must be between -1000 and 1000, got "+p) {
			t.Errorf("--priority %s: exit %d %q %q, want 2 naming the range", p, code, out, errOut)
		}
	}
	if code, out, _ := s.cli(t, "backfill", "list"); code != 0 || strings.Contains(out, "t.daily") {
		t.Fatalf("refused creates created a backfill: %d %q", code, out)
	}
	code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--priority", "1000", "--json")
	var b struct{ Priority int64 }
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Priority != 1000 {
		t.Fatalf("--priority 1000: exit %d %q %q", code, out, errOut)
	}
}
