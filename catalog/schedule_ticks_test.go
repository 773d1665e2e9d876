package catalog

import (
	"testing"
	"time"
)

// TestOwedTicksCatchup: a per-second schedule down for 20 s with a 5 s
// window and at most 3 ticks launches the newest 3 of the window, oldest
// first, and records every older tick as missed, so the history has no
// holes.
func TestOwedTicksCatchup(t *testing.T) {
	c := mustCron(t, "* * * * * *", "")
	last := utc(t, "2026-05-01 12:00:00")
	now := last.Add(20 * time.Second)
	o := c.OwedTicks(last, now, Catchup{Window: 5 * time.Second, MaxTicks: 3}, 100)
	if len(o.Launch) != 3 || !o.Launch[0].Equal(now.Add(-2*time.Second)) || !o.Launch[2].Equal(now) {
		t.Fatalf("launch %v, want the 3 newest ticks ending at now", o.Launch)
	}
	if len(o.Missed) != 17 || !o.Missed[0].Equal(last.Add(time.Second)) || !o.Missed[16].Equal(now.Add(-3*time.Second)) || o.MissedMore != 0 {
		t.Fatalf("missed %d (%v … ) more %d, want the 17 older ticks", len(o.Missed), o.Missed, o.MissedMore)
	}
	// Listing only the newest 5 missed ticks counts the others.
	o = c.OwedTicks(last, now, Catchup{Window: 5 * time.Second, MaxTicks: 3}, 5)
	if len(o.Missed) != 5 || o.MissedMore != 12 || !o.MissedLast.Equal(last.Add(12*time.Second)) || !o.Missed[0].Equal(last.Add(13*time.Second)) {
		t.Fatalf("missed %v more %d last %v, want 5 listed from 12:00:13, 12 counted up to 12:00:12", o.Missed, o.MissedMore, o.MissedLast)
	}
	// Nothing owed right after the last tick; no catch-up at all with
	// MaxTicks 0.
	if o := c.OwedTicks(now, now, Catchup{Window: time.Hour, MaxTicks: 3}, 10); len(o.Launch)+len(o.Missed) != 0 {
		t.Fatalf("owed %+v at the last tick", o)
	}
	if o := c.OwedTicks(last, now, Catchup{Window: time.Hour, MaxTicks: 0}, 100); len(o.Launch) != 0 || len(o.Missed) != 20 {
		t.Fatalf("MaxTicks 0: launch %d missed %d, want 0 and 20", len(o.Launch), len(o.Missed))
	}
}

func TestCronPrev(t *testing.T) {
	c := mustCron(t, "30 1 * * *", "America/New_York")
	// The day after fall-back: the previous tick is 01:30 EDT of
	// November 1 (its only one), not 01:30 EST.
	p, ok := c.Prev(utc(t, "2026-11-02 06:30:00"))
	if !ok || !p.Equal(utc(t, "2026-11-01 05:30:00")) {
		t.Fatalf("Prev = %v %v, want 2026-11-01 05:30 UTC", p, ok)
	}
	y := mustCron(t, "0 0 1 1 *", "")
	if p, ok := y.Prev(utc(t, "2026-06-01 00:00:00")); !ok || !p.Equal(utc(t, "2026-01-01 00:00:00")) {
		t.Fatalf("yearly Prev = %v %v", p, ok)
	}
}

// TestClosedWindows: an hourly cron on an hourly asset targets the hour
// that just ended, also across the fall-back fold (both 01:00 hours are
// partitions); a daily cron at 00:05 targets the day before's hours.
func TestClosedWindows(t *testing.T) {
	ts, err := NewTimeScheme(TimeParams{Unit: KindHourly, Start: "2026-10-01-00:00-0400", Timezone: "America/New_York", KeyFormat: "%Y-%m-%d-%H:%M%z"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	hourly := mustCron(t, "0 * * * *", "America/New_York")
	at := utc(t, "2026-11-01 06:00:00") // 01:00 EST, the second 01:00
	prev, _ := hourly.Prev(at)
	lo, hi := ClosedWindows(ts, n, prev, at)
	if hi-lo != 1 || ts.WindowStart(lo).UTC() != utc(t, "2026-11-01 05:00:00") {
		t.Fatalf("hourly tick at %v: windows [%d,%d) starting %v, want the one hour starting 05:00 UTC (01:00 EDT)", at, lo, hi, ts.WindowStart(lo).UTC())
	}
	daily := mustCron(t, "5 0 * * *", "America/New_York")
	at = utc(t, "2026-11-02 05:05:00") // 00:05 EST on November 2
	prev, _ = daily.Prev(at)
	lo, hi = ClosedWindows(ts, n, prev, at)
	if hi-lo != 25 {
		t.Fatalf("daily tick after fall-back day: %d windows, want 25 (that day had 25 hours)", hi-lo)
	}
	// Clamped to the space: nothing before window 0 or past n.
	if lo, hi := ClosedWindows(ts, 10, utc(t, "2026-09-01 00:00:00"), utc(t, "2027-01-01 00:00:00")); lo != 0 || hi != 10 {
		t.Fatalf("clamped range [%d,%d), want [0,10)", lo, hi)
	}
	if lo, hi := ClosedWindows(ts, n, at, at); lo != hi {
		t.Fatalf("no time passed: [%d,%d), want empty", lo, hi)
	}
	dts, err := NewTimeScheme(TimeParams{Unit: KindDaily, Start: "2026-01-01", Timezone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi = WindowsWithin(dts, n, utc(t, "2026-06-10 00:30:00"), 7*24*time.Hour)
	if hi-lo != 7 || dts.WindowStart(hi-1).Format("2006-01-02") != "2026-06-09" {
		t.Fatalf("last 7 days: [%d,%d) ending %s, want 7 days ending 2026-06-09", lo, hi, dts.WindowStart(hi-1).Format("2006-01-02"))
	}
}

func BenchmarkCronNext(b *testing.B) {
	c, err := ParseCron("*/10 * * * * *", "Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	t := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		t, _ = c.Next(t)
	}
}
