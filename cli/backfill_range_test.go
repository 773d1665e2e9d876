package cli_test

import (
	"regexp"
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
