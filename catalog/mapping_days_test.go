package catalog

import (
	"fmt"
	"testing"
)

// The day-number mapping between day-based time schemes gives what the
// time-window mapping through instants gives, for every pair of daily,
// weekly and monthly schemes with different starts, in timezones with
// daylight saving (some at midnight), over years of windows.
func TestDayMapperMatchesTimeWindows(t *testing.T) {
	type sch struct{ unit, start string }
	schemes := []sch{{"daily", "2019-12-30"}, {"daily", "2021-03-27"}, {"weekly", "2020-01-06"}, {"weekly", "2021-10-31"},
		{"monthly", "2019-11-01"}, {"monthly", "2021-03-01"}}
	for _, tz := range []string{"UTC", "Europe/Berlin", "America/Sao_Paulo", "America/Havana", "Pacific/Apia"} {
		for _, d := range schemes {
			for _, u := range schemes {
				name := fmt.Sprintf("%s %s %s <- %s %s", tz, d.unit, d.start, u.unit, u.start)
				ds, err := NewTimeScheme(TimeParams{Unit: Kind(d.unit), Start: d.start, Timezone: tz})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				us, err := NewTimeScheme(TimeParams{Unit: Kind(u.unit), Start: u.start, Timezone: tz})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				days, ok := dayMapper(ds, us)
				if !ok {
					t.Fatalf("%s: no day mapper", name)
				}
				for i := int64(-40); i < 1500; i++ {
					lo, hi := days(i)
					wlo, whi := timeWindowMap(ds, us, i)
					if lo != wlo || hi != whi {
						t.Fatalf("%s: window %d maps to [%d, %d], through instants [%d, %d]", name, i, lo, hi, wlo, whi)
					}
				}
			}
		}
	}
	h, _ := NewTimeScheme(TimeParams{Unit: KindHourly, Start: "2021-01-01-00:00"})
	dUTC, _ := NewTimeScheme(TimeParams{Unit: KindDaily, Start: "2021-01-01"})
	dBer, _ := NewTimeScheme(TimeParams{Unit: KindDaily, Start: "2021-01-01", Timezone: "Europe/Berlin"})
	if _, ok := dayMapper(h, dUTC); ok {
		t.Fatal("a day mapper for an hourly scheme")
	}
	if _, ok := dayMapper(dBer, dUTC); ok {
		t.Fatal("a day mapper across timezones")
	}
}

// In UTC, a day-based window starts at the midnight of its first civil
// day computed by arithmetic: the very Time the calendar gives.
func TestWindowStartUTCArithmetic(t *testing.T) {
	for _, p := range []TimeParams{{Unit: KindDaily, Start: "2019-12-30"}, {Unit: KindWeekly, Start: "2020-01-06"}, {Unit: KindMonthly, Start: "2019-11-01"}} {
		ts, err := NewTimeScheme(p)
		if err != nil {
			t.Fatal(err)
		}
		s := ts.(*timeScheme)
		for i := int64(-3000); i < 30000; i += 7 {
			y, m, d := s.civil(i).Date()
			if got, want := s.WindowStart(i), localMidnight(y, m, d, s.loc); got != want {
				t.Fatalf("%s window %d starts %v, want %v", p.Unit, i, got, want)
			}
		}
	}
}
