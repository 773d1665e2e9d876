package jobs

import "testing"

// TestPartitionsARunAgreesWithItsCount: the estimate's reason says
// "1 partition", not "1 partitions"; other sizes keep the plural and the
// rounding of roundCount.
func TestPartitionsARunAgreesWithItsCount(t *testing.T) {
	for size, want := range map[float64]string{
		1:    "a.daily had about 1 partition a run",
		1.04: "a.daily had about 1 partition a run",
		1.5:  "a.daily had about 1.5 partitions a run",
		8:    "a.daily had about 8 partitions a run",
		24.4: "a.daily had about 24 partitions a run",
	} {
		if got := partitionsARun("a.daily", size); got != want {
			t.Errorf("partitionsARun(%v) = %q, want %q", size, got, want)
		}
	}
}
