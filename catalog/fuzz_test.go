package catalog

import (
	"errors"
	"testing"
	"time"
)

// fuzzSchemes returns one scheme of every kind with its space.
func fuzzSchemes(t testing.TB) ([]Scheme, []Space) {
	now := time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)
	dyn := DynamicKeysMap{"partners": {"p1", "p2", "ünïcode"}}
	schemes := []Scheme{
		mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"}),
		mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-03-01-00:00", Timezone: "Europe/Berlin", KeyFormat: "%Y-%m-%d-%H:%M%z"}),
		mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01", Timezone: "Europe/Berlin"}),
		mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2025-03-01", KeyFormat: "%Y%m%d"}),
		mustTime(t, TimeParams{Unit: KindWeekly, Start: "2025-01-06"}),
		mustTime(t, TimeParams{Unit: KindMonthly, Start: "2025-01-01", KeyFormat: "%Y-%m"}),
		mustStatic(t, "acme", "globex", "initech"),
		mustDynamic(t, "partners"),
		dailyRegion(t),
		mustMulti(t, Dimension{"region", mustStatic(t, "eu", "us")}, Dimension{"partner", mustDynamic(t, "partners")}),
	}
	spaces := make([]Space, len(schemes))
	for i, s := range schemes {
		spaces[i] = s.Space(now, dyn)
	}
	return schemes, spaces
}

func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"2025-01-01", "2025-01-01-00:00", "2025-03-30-03:00+0200", "20250131", "2025-02", "acme", "p1", "2025-01-02|us", "eu|p2", "", "|", "2025-1-1", "+025-01-01"} {
		f.Add(uint8(0), k)
	}
	schemes, spaces := fuzzSchemes(f)
	f.Fuzz(func(t *testing.T, sel uint8, key string) {
		for i := range schemes {
			if sel != 0 && int(sel)%len(schemes) != i {
				continue
			}
			s, sp := schemes[i], spaces[i]
			verr := s.ValidateKey(key)
			if verr != nil {
				var ke *KeyError
				if !errors.As(verr, &ke) || ke.Key != key {
					t.Fatalf("%s: ValidateKey(%q) returned %T %v", s.Describe(), key, verr, verr)
				}
			}
			idx, err := sp.Index(key)
			if err != nil {
				var ke *KeyError
				if !errors.As(err, &ke) {
					t.Fatalf("%s: Index(%q) returned non-KeyError %v", s.Describe(), key, err)
				}
				continue
			}
			if verr != nil {
				t.Fatalf("%s: Index accepted %q but ValidateKey rejected it: %v", s.Describe(), key, verr)
			}
			if idx < 0 || idx >= sp.Len() {
				t.Fatalf("%s: Index(%q) = %d outside [0,%d)", s.Describe(), key, idx, sp.Len())
			}
			if got := sp.Key(idx); got != key {
				t.Fatalf("%s: Key(Index(%q)) = %q", s.Describe(), key, got)
			}
		}
	})
}

func FuzzParseRange(f *testing.F) {
	f.Add(uint8(2), "2025-01-01", "2025-02-01")
	f.Add(uint8(8), "2025-01-02", "2025-01-03|us")
	f.Add(uint8(8), "", "2025-01-03")
	f.Add(uint8(6), "globex", "acme")
	f.Add(uint8(0), "2025-01-01-05:00", "2025-01-01-04:00")
	schemes, spaces := fuzzSchemes(f)
	f.Fuzz(func(t *testing.T, sel uint8, start, end string) {
		i := int(sel) % len(schemes)
		s, sp := schemes[i], spaces[i]
		lo, hi, err := ParseRange(sp, s, start, end)
		if err != nil {
			var ke *KeyError
			var re *RangeError
			if !errors.As(err, &ke) && !errors.As(err, &re) {
				t.Fatalf("%s: ParseRange(%q, %q) returned %T %v", s.Describe(), start, end, err, err)
			}
			return
		}
		if lo < 0 || hi < lo || hi >= sp.Len() {
			t.Fatalf("%s: ParseRange(%q, %q) = %d..%d (Len %d)", s.Describe(), start, end, lo, hi, sp.Len())
		}
		if start != "" && sp.Key(lo) != start {
			if _, ok := s.(MultiScheme); !ok {
				t.Fatalf("%s: Key(lo) = %q, want %q", s.Describe(), sp.Key(lo), start)
			}
		}
	})
}
