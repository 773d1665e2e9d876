package views

import "testing"

// A share is rounded down, as the CLI does, so a backfill is never "100%"
// done before its last partition, and never "0%" once one is done.
func TestPctRoundsDown(t *testing.T) {
	for _, c := range []struct {
		part, total int64
		want        string
	}{
		{0, 0, "0%"}, {0, 10, "0%"}, {1, 1000, "<1%"}, {1, 100, "1%"}, {24, 62, "38%"},
		{199, 200, "99%"}, {1999999, 2000000, "99%"}, {200, 200, "100%"},
	} {
		if got := Pct(c.part, c.total); got != c.want {
			t.Errorf("Pct(%d, %d) = %q, want %q", c.part, c.total, got, c.want)
		}
	}
}

// Every state an attempt, run, chunk or backfill can be in has its own
// non-colour cue and a colour of the palette; none falls back to "?".
func TestRunStateCues(t *testing.T) {
	for _, s := range []string{"running", "succeeded", "failed", "timeout", "canceled", "interrupted", "queued", "pending",
		"upstream_failed", "materialized", "not_run", "RUNNING", "PAUSED", "CANCELING", "CANCELED", "SUCCEEDED", "FAILED", "PENDING"} {
		if RunStateLetter(s) == "?" {
			t.Errorf("%s has no letter", s)
		}
	}
	if RunStateClass("timeout") != RunStateClass("failed") {
		t.Errorf("a timeout is not shown as a failure: %s", RunStateClass("timeout"))
	}
}
