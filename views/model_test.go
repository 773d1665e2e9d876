package views

import (
	"strings"
	"testing"
)

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

// The status board's sparkline label rounded a day's share to the nearest
// percent while the fresh cell beside it rounds down: a static asset with
// 2 of 3 partitions fresh read "66%" in the cell and "67%" in its
// sparkline, and a day of 199 of 200 read "100%". Both round down now.
func TestSparkLabelRoundsDownAsTheFreshCell(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		want string
	}{
		{[]float64{2.0 / 3}, "from 66% to 66%, lowest 66%, average 66%"},
		{[]float64{-1, 199.0 / 200, 0.29}, "from 99% to 29%, lowest 29%, average 64%"},
		{[]float64{0.001, 1}, "from <1% to 100%, lowest <1%, average 50%"},
	} {
		if got := sparkLabel(c.vals); !strings.HasSuffix(got, c.want) {
			t.Errorf("sparkLabel(%v) = %q, want it to end with %q", c.vals, got, c.want)
		}
	}
	if got, want := SharePct(2.0/3), Pct(2, 3); got != want {
		t.Errorf("SharePct(2/3) = %q, Pct(2, 3) = %q", got, want)
	}
}
