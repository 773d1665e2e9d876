package catalog

import "testing"

// TestHealthOf: one word per partition. Data decides first (a failed last
// attempt over data still there is fresh or stale, flagged), a running
// attempt comes before everything, and failed means no data.
func TestHealthOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		last         string
		materialized bool
		reason       StaleReason
		want         Health
		lastFailed   bool
	}{
		{"materialized", true, Fresh, HealthFresh, false},
		{"failed", true, Fresh, HealthFresh, true},
		{"failed", true, CodeChanged, HealthStale, true},
		{"materialized", true, Tainted, HealthStale, false},
		{"failed", false, NeverMaterialized, HealthFailed, false},
		{"in_progress", true, Fresh, HealthInProgress, false},
		{"in_progress", false, NeverMaterialized, HealthInProgress, false},
		{"", false, NeverMaterialized, HealthMissing, false},
	} {
		h, lf := HealthOf(tc.last, tc.materialized, tc.reason)
		if h != tc.want || lf != tc.lastFailed {
			t.Errorf("HealthOf(%q, %v, %s) = %s, %v; want %s, %v", tc.last, tc.materialized, tc.reason, h, lf, tc.want, tc.lastFailed)
		}
	}
	var c HealthCounts
	c.Add(HealthFresh, Fresh, true)
	c.Add(HealthStale, CodeChanged, false)
	c.AddN(HealthMissing, NeverMaterialized, false, 3)
	c = c.Plus(HealthCounts{Failed: 2, StaleBy: map[StaleReason]int64{Tainted: 1}, Stale: 1})
	if c.Total() != 8 || c.Materialized() != 3 || c.NeverMaterialized() != 5 || c.LastAttemptFailed != 1 || c.StaleBy[CodeChanged]+c.StaleBy[Tainted] != c.Stale {
		t.Errorf("counts %+v", c)
	}
}
