package handlers

import (
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// barHealth reads the worst of a bar: failed, then running, then stale,
// then never materialized, then partly, else fresh.
func TestBarHealthWorstFirst(t *testing.T) {
	bar := func(m, s, f, r, x int64) views.Bar {
		return views.Bar{Segs: []views.Seg{{Status: db.StatusMaterialized, N: m}, {Status: views.SegStale, N: s}, {Status: db.StatusFailed, N: f}, {Status: db.StatusInProgress, N: r}, {Status: db.StatusMissing, N: x}}}
	}
	for _, c := range []struct {
		b    views.Bar
		want string
	}{
		{bar(5, 1, 1, 1, 1), views.HealthFailed},
		{bar(5, 1, 0, 1, 1), views.HealthRunning},
		{bar(5, 1, 0, 0, 1), views.HealthStale},
		{bar(0, 0, 0, 0, 9), views.HealthMissing},
		{bar(0, 0, 0, 0, 0), views.HealthMissing},
		{bar(3, 0, 0, 0, 1), views.HealthPartial},
		{bar(3, 0, 0, 0, 0), views.HealthFresh},
	} {
		if got := barHealth(c.b); got != c.want {
			t.Errorf("barHealth(%v) = %s, want %s", c.b.Segs, got, c.want)
		}
	}
}
