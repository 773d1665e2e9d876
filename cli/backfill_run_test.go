package cli_test

import (
	"strings"
	"testing"
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
