package handlers

import "testing"

// TestEstimateSeconds: the estimate's figures are written as every other
// duration on the pages.
func TestEstimateSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    float64
		want string
	}{{0.4, "400 ms"}, {1.23, "1.2 s"}, {75.4, "1 min 15 s"}, {30258, "8 h 24 min"}, {3600, "1 h 0 min"}, {674390, "7 days 19 h"}, {86400, "24 h 0 min"}} {
		if got := seconds(c.s); got != c.want {
			t.Errorf("seconds(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}
