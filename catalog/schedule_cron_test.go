package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustCron(t *testing.T, expr, tz string) *Cron {
	t.Helper()
	c, err := ParseCron(expr, tz)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", expr, tz, err)
	}
	return c
}

// utc parses "2006-01-02 15:04:05" as UTC.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCronDST checks the three DST rules (see Cron) in two zones: the
// instants are written in UTC so that the test cannot agree with the code
// by reading both in the zone.
func TestCronDST(t *testing.T) {
	cases := []struct {
		name, expr, tz, from string
		want                 []string // UTC
	}{
		// New York 2026: clocks jump 02:00 EST → 03:00 EDT on March 8 and
		// go back 02:00 EDT → 01:00 EST on November 1.
		{"NY daily time in the gap fires at the gap's end", "30 2 * * *", "America/New_York", "2026-03-07 17:00:00",
			[]string{"2026-03-08 07:00:00", "2026-03-09 06:30:00"}},
		{"NY daily time in the fold fires once, first occurrence", "30 1 * * *", "America/New_York", "2026-10-31 16:00:00",
			[]string{"2026-11-01 05:30:00", "2026-11-02 06:30:00"}},
		{"NY hourly fires at both 01:00s", "0 * * * *", "America/New_York", "2026-11-01 04:00:00",
			[]string{"2026-11-01 05:00:00", "2026-11-01 06:00:00", "2026-11-01 07:00:00"}},
		{"NY hourly skips the hour that does not exist", "0 * * * *", "America/New_York", "2026-03-08 05:00:00",
			[]string{"2026-03-08 06:00:00", "2026-03-08 07:00:00", "2026-03-08 08:00:00"}},
		{"NY every 15 min of the missing hour fires once", "*/15 2 * * *", "America/New_York", "2026-03-08 05:00:00",
			[]string{"2026-03-08 07:00:00", "2026-03-09 06:00:00"}},
		{"NY hourly from inside the fold's first pass", "0 * * * *", "America/New_York", "2026-11-01 05:30:00",
			[]string{"2026-11-01 06:00:00", "2026-11-01 07:00:00"}},
		{"NY half-hourly through the fold", "*/30 * * * *", "America/New_York", "2026-11-01 05:00:00",
			[]string{"2026-11-01 05:30:00", "2026-11-01 06:00:00", "2026-11-01 06:30:00", "2026-11-01 07:00:00"}},
		// Berlin 2026: 02:00 CET → 03:00 CEST on March 29, 03:00 CEST →
		// 02:00 CET on October 25.
		{"Berlin daily time in the gap", "30 2 * * *", "Europe/Berlin", "2026-03-28 12:00:00",
			[]string{"2026-03-29 01:00:00", "2026-03-30 00:30:00"}},
		{"Berlin daily time in the fold", "30 2 * * *", "Europe/Berlin", "2026-10-24 12:00:00",
			[]string{"2026-10-25 00:30:00", "2026-10-26 01:30:00"}},
		{"Berlin hourly at both 02:00s", "0 * * * *", "Europe/Berlin", "2026-10-24 23:30:00",
			[]string{"2026-10-25 00:00:00", "2026-10-25 01:00:00", "2026-10-25 02:00:00"}},
		{"Berlin hourly skips 02:00 in spring", "0 * * * *", "Europe/Berlin", "2026-03-28 23:30:00",
			[]string{"2026-03-29 00:00:00", "2026-03-29 01:00:00", "2026-03-29 02:00:00"}},
		{"Berlin seconds field in the fold", "0 0 2 * * *", "Europe/Berlin", "2026-10-24 12:00:00",
			[]string{"2026-10-25 00:00:00", "2026-10-26 01:00:00"}},
		{"UTC every 10 seconds", "*/10 * * * * *", "", "2026-01-01 00:00:05",
			[]string{"2026-01-01 00:00:10", "2026-01-01 00:00:20", "2026-01-01 00:00:30"}},
		{"day of month or day of week", "0 0 1 * MON", "UTC", "2026-06-01 00:00:00",
			[]string{"2026-06-08 00:00:00", "2026-06-15 00:00:00", "2026-06-22 00:00:00", "2026-06-29 00:00:00", "2026-07-01 00:00:00"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCron(t, tc.expr, tc.tz)
			got := c.NextN(utc(t, tc.from), len(tc.want))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d ticks, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				if !got[i].Equal(utc(t, w)) {
					t.Errorf("tick %d: got %s (%s), want %s UTC", i, got[i].UTC().Format(time.DateTime), got[i].In(c.Location()).Format("15:04 MST"), w)
				}
			}
		})
	}
}

// TestCronYearCounts walks a whole year in zones with DST: a daily cron
// fires once a day whatever the clocks do, an hourly one once per real hour,
// ticks strictly increase and no tick id repeats.
func TestCronYearCounts(t *testing.T) {
	for _, tz := range []string{"America/New_York", "Europe/Berlin", "UTC"} {
		loc := mustZone(t, tz)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
		to := time.Date(2027, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
		for _, tc := range []struct {
			expr string
			want int
		}{
			{"30 2 * * *", 365}, {"30 1 * * *", 365}, {"0 3 * * *", 365}, {"0 * * * *", int(to.Sub(from).Hours() + 0.5)},
			{"15,45 * * * *", 2 * int(to.Sub(from).Hours()+0.5)},
		} {
			c := mustCron(t, tc.expr, tz)
			ticks, more := c.Between(from, to, 0)
			if more || len(ticks) != tc.want {
				t.Errorf("%s %q: %d ticks in 2026 (more %v), want %d", tz, tc.expr, len(ticks), more, tc.want)
			}
			seen := map[string]bool{}
			for i, tk := range ticks {
				if i > 0 && !tk.After(ticks[i-1]) {
					t.Fatalf("%s %q: tick %s not after %s", tz, tc.expr, tk, ticks[i-1])
				}
				id := TickID("s", tk)
				if seen[id] {
					t.Fatalf("%s %q: tick id %s twice", tz, tc.expr, id)
				}
				seen[id] = true
			}
		}
	}
}

func TestCronBetweenLimit(t *testing.T) {
	c := mustCron(t, "* * * * * *", "")
	from := utc(t, "2026-01-01 00:00:00")
	ticks, more := c.Between(from, from.Add(10*time.Second), 3)
	if len(ticks) != 3 || !more || !ticks[0].Equal(from.Add(time.Second)) {
		t.Fatalf("got %v more=%v, want 3 ticks from 00:00:01 and more", ticks, more)
	}
	ticks, more = c.Between(from, from.Add(10*time.Second), 0)
	if len(ticks) != 10 || more || !ticks[9].Equal(from.Add(10*time.Second)) {
		t.Fatalf("got %d ticks more=%v, want 10 ending at 00:00:10", len(ticks), more)
	}
}

func TestTickID(t *testing.T) {
	if got := TickID("nightly", utc(t, "2026-03-08 07:00:00")); got != "nightly:1772953200" {
		t.Fatalf("TickID = %q", got)
	}
}

// TestParseCronErrors: each bad expression or zone is refused with the
// field at fault and how to fix it.
func TestParseCronErrors(t *testing.T) {
	cases := []struct {
		expr, tz, field, msg string
	}{
		{"61 * * * *", "", "minute", "61"},
		{"* 25 * * *", "", "hour", "25"},
		{"0 0 32 * *", "", "day of month", "32"},
		{"0 0 * 13 *", "", "month", "13"},
		{"0 0 * * FUNDAY", "", "day of week", "FUNDAY"},
		{"61 * * * * *", "", "second", "61"},
		{"* * * * * * *", "", "", "has 7 fields"},
		{"* * *", "", "", "has 3 fields"},
		{"", "", "", "empty"},
		{"0 0 30 2 *", "", "", "never fires"},
		{"0 * * * *", "Mars/Olympus", "", `unknown time zone "Mars/Olympus"`},
		{"0 * * * *", "Local", "", "unknown time zone"},
		{"TZ=UTC 0 * * * *", "", "", "timezone key"},
		{"@every 5m", "", "", "@every is an interval"},
		{"@fortnightly", "", "", "unknown descriptor"},
	}
	for _, tc := range cases {
		_, err := ParseCron(tc.expr, tc.tz)
		var ce *CronError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCron(%q, %q) = %v, want a *CronError", tc.expr, tc.tz, err)
			continue
		}
		if ce.Field != tc.field || !strings.Contains(ce.Error(), tc.msg) {
			t.Errorf("ParseCron(%q, %q): field %q, message %q; want field %q and %q in it", tc.expr, tc.tz, ce.Field, ce.Error(), tc.field, tc.msg)
		}
	}
	for _, ok := range []string{"@daily", "@hourly", "0 0 1 * MON", "0 9 * * 1-5", "*/10 * * * * *"} {
		if _, err := ParseCron(ok, "Europe/Berlin"); err != nil {
			t.Errorf("ParseCron(%q) refused: %v", ok, err)
		}
	}
}
