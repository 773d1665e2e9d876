package catalog

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

var propZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham"}

// randomScheme returns a random scheme (time, static or multi) and a now.
func randomScheme(t *testing.T, r *rand.Rand) (Scheme, time.Time) {
	units := []Kind{KindHourly, KindDaily, KindWeekly, KindMonthly}
	unit := units[r.Intn(len(units))]
	tz := propZones[r.Intn(len(propZones))]
	loc, _ := time.LoadLocation(tz)
	start := time.Date(2000+r.Intn(30), time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), 0, 0, 0, loc)
	p := TimeParams{Unit: unit, Timezone: tz, EndOffset: int64(r.Intn(5) - 1)}
	span := map[Kind]time.Duration{KindHourly: 2000 * time.Hour, KindDaily: 3 * 365 * 24 * time.Hour, KindWeekly: 5 * 365 * 24 * time.Hour, KindMonthly: 30 * 365 * 24 * time.Hour}[unit]
	switch unit {
	case KindHourly:
		p.Start = start.Format("2006-01-02-15:04")
		if tz != "UTC" && tz != "Asia/Kolkata" {
			p.KeyFormat = "%Y-%m-%d-%H:%M%z"
		}
	case KindMonthly:
		p.Start = start.Format("2006-01") + "-01"
		if r.Intn(2) == 0 {
			p.KeyFormat = "%Y-%m"
		}
	default:
		p.Start = start.Format("2006-01-02")
		if r.Intn(3) == 0 {
			p.KeyFormat = "%Y%m%d"
		}
	}
	if r.Intn(3) == 0 {
		end := start.Add(time.Duration(r.Int63n(int64(span))) + span/10)
		if unit == KindHourly {
			p.End = end.Format("2006-01-02-15:04")
		} else {
			p.End = end.Format("2006-01-02")
		}
	}
	now := start.Add(time.Duration(r.Int63n(int64(span))) - span/20)
	ts, err := NewTimeScheme(p)
	if err != nil {
		t.Fatalf("NewTimeScheme(%+v): %v", p, err)
	}
	if r.Intn(4) == 0 {
		keys := []string{}
		for i := 0; i < 1+r.Intn(5); i++ {
			keys = append(keys, fmt.Sprintf("k%d", i))
		}
		return mustMulti(t, Dimension{"t", ts}, Dimension{"r", mustStatic(t, keys...)}), now
	}
	return ts, now
}

func TestSpaceProperties(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	for iter := 0; iter < 200; iter++ {
		s, now := randomScheme(t, r)
		sp := s.Space(now, nil)
		n := sp.Len()
		name := fmt.Sprintf("#%d %s now=%s len=%d", iter, s.Describe(), now.Format(time.RFC3339), n)
		if n < 0 {
			t.Fatalf("%s: negative Len", name)
		}
		if n <= 20000 {
			if got := int64(len(sp.Keys(0, n))); got != n {
				t.Fatalf("%s: len(Keys(0,Len)) = %d", name, got)
			}
		}
		for k := 0; k < 30 && n > 0; k++ {
			i := r.Int63n(n)
			key := sp.Key(i)
			if err := s.ValidateKey(key); err != nil {
				t.Fatalf("%s: ValidateKey(Key(%d)=%q): %v", name, i, key, err)
			}
			if j, err := sp.Index(key); err != nil || j != i {
				t.Fatalf("%s: Index(Key(%d)=%q) = %d, %v", name, i, key, j, err)
			}
			off, lim := r.Int63n(n), r.Int63n(50)
			keys := sp.Keys(off, lim)
			if want := min(lim, n-off); int64(len(keys)) != want {
				t.Fatalf("%s: len(Keys(%d,%d)) = %d, want %d", name, off, lim, len(keys), want)
			}
			for x, kk := range keys {
				if kk != sp.Key(off+int64(x)) {
					t.Fatalf("%s: Keys(%d,%d)[%d] = %q, Key = %q", name, off, lim, x, kk, sp.Key(off+int64(x)))
				}
			}
		}
		// Time order: window starts strictly increase; keys parse back to them.
		ts, dim, _ := SchemeTimeDim(s)
		tn := n
		if dim >= 0 {
			tn = sp.(MultiSpace).DimSpaces()[dim].Len()
		}
		var prev time.Time
		for i := int64(0); i < min(tn, 500); i++ {
			ws := ts.WindowStart(i)
			if i > 0 && !ws.After(prev) {
				t.Fatalf("%s: WindowStart(%d) = %s not after %s", name, i, ws, prev)
			}
			if ts.IndexAt(ws) != i || ts.IndexAt(ws.Add(-time.Nanosecond)) != i-1 {
				t.Fatalf("%s: IndexAt(WindowStart(%d)) = %d", name, i, ts.IndexAt(ws))
			}
			prev = ws
		}
	}
}

func TestKeysParseInTimeOrder(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for iter := 0; iter < 200; iter++ {
		s, now := randomScheme(t, r)
		ts, dim, _ := SchemeTimeDim(s)
		if dim >= 0 {
			continue
		}
		sp := s.Space(now, nil)
		var prev time.Time
		for i := int64(0); i < min(sp.Len(), 300); i++ {
			k := sp.Key(i)
			inst, err := time.ParseInLocation(ts.KeyFormat(), k, ts.Location())
			if err != nil {
				t.Fatalf("%s: parse %q: %v", s.Describe(), k, err)
			}
			if i > 0 && !inst.After(prev) {
				t.Fatalf("%s: key %q (%s) not after previous (%s)", s.Describe(), k, inst, prev)
			}
			prev = inst
		}
	}
}
