package catalog

import (
	"testing"
	"time"
)

// TestAssetLagOfAnEndedScheme: a scheme with a fixed end whose final window
// is the latest fresh partition is not behind, however long ago it ended
// (it read "over policy" forever: nothing newer can ever be built); an
// older latest fresh partition (the last one missing, failed or stale) and
// an open-ended scheme keep their lag, now − the end of the window.
func TestAssetLagOfAnEndedScheme(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	now := utc("2026-11-29 10:00")
	scheme := func(unit Kind, start, end string) TimeScheme {
		t.Helper()
		s, err := NewTimeScheme(TimeParams{Unit: unit, Start: start, End: end})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ended := scheme(KindDaily, "2025-01-29", "2025-02-01")
	open := scheme(KindDaily, "2025-01-29", "")
	// A monthly scheme whose end falls inside January: December is its
	// last (complete) window.
	monthly := scheme(KindMonthly, "2024-10-01", "2025-01-15")
	region, err := NewStaticScheme([]string{"eu", "us"})
	if err != nil {
		t.Fatal(err)
	}
	multi, err := NewMultiScheme([]Dimension{{Name: "day", Scheme: ended}, {Name: "region", Scheme: region}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		s         Scheme
		windowEnd string
		wantLag   time.Duration
		wantEnded bool
	}{
		{"ended, last partition (2025-01-31) fresh", ended, "2025-02-01 00:00", 0, true},
		{"ended, last partition not fresh: 2025-01-30 is the latest fresh", ended, "2025-01-31 00:00", now.Sub(utc("2025-01-31 00:00")), false},
		{"open-ended, 2025-01-31", open, "2025-02-01 00:00", now.Sub(utc("2025-02-01 00:00")), false},
		{"monthly ended mid-January, December fresh", monthly, "2025-01-01 00:00", 0, true},
		{"monthly ended mid-January, November the latest fresh", monthly, "2024-12-01 00:00", now.Sub(utc("2024-12-01 00:00")), false},
		{"multi on the ended days, last day fresh", multi, "2025-02-01 00:00", 0, true},
	} {
		lag, isEnded := AssetLag(c.s, utc(c.windowEnd), true, 0, now)
		if lag != c.wantLag || isEnded != c.wantEnded {
			t.Errorf("%s: AssetLag = %v, %v; want %v, %v", c.name, lag, isEnded, c.wantLag, c.wantEnded)
		}
	}
	// Without a time window: now − materialized at, never ended.
	mat := utc("2026-11-28 10:00")
	if lag, isEnded := AssetLag(region, time.Time{}, false, mat.UnixMilli(), now); lag != 24*time.Hour || isEnded {
		t.Errorf("static: AssetLag = %v, %v; want 24h, false", lag, isEnded)
	}
	// A window ending after now (an end_offset window) has no lag yet.
	if lag, _ := AssetLag(open, now.Add(time.Hour), true, 0, now); lag != 0 {
		t.Errorf("a window still open: lag %v, want 0", lag)
	}
}
