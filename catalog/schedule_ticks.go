package catalog

import "time"

// Tick arithmetic of schedules: which ticks a schedule owes after a
// downtime, which one came before a tick, and which partitions of a
// time-partitioned asset a tick targets. Pure functions of the instants
// they are given.

// Catchup bounds what a schedule launches for ticks it missed (the server
// was down): the ticks within Window before now, at most MaxTicks of them.
type Catchup struct {
	Window   time.Duration
	MaxTicks int
}

// MissedOutsideWindow is the skip reason of a missed tick that is not
// caught up.
const MissedOutsideWindow = "missed: outside the catch-up window"

// Owed is what a schedule owes between its last evaluated tick and now.
type Owed struct {
	// Launch are the ticks to launch, oldest first: the newest MaxTicks
	// of those within the window.
	Launch []time.Time
	// Missed are older ticks, oldest first, recorded as skipped
	// (MissedOutsideWindow) so that the history has no holes; at most
	// the limit given to OwedTicks.
	Missed []time.Time
	// MissedMore counts missed ticks beyond Missed (a per-second schedule
	// down for a day misses 86,400); MissedLast is the newest of them.
	MissedMore int64
	MissedLast time.Time
}

// OwedTicks lists the ticks of c in (last, now] and splits them into those
// to launch and those missed, listing at most missedLimit missed ones (the
// newest of them; the older ones are counted). Ticks are walked once, so
// the cost is the number of ticks in the interval.
func (c *Cron) OwedTicks(last, now time.Time, cu Catchup, missedLimit int) Owed {
	var o Owed
	windowStart := now.Add(-cu.Window)
	var recent []time.Time // within the window, newest MaxTicks kept
	for t := last; ; {
		next, ok := c.Next(t)
		if !ok || next.After(now) {
			break
		}
		t = next
		if !next.Before(windowStart) {
			recent = append(recent, next)
			continue
		}
		o.Missed = append(o.Missed, next)
	}
	if n := len(recent) - max(cu.MaxTicks, 0); n > 0 {
		o.Missed = append(o.Missed, recent[:n]...)
		recent = recent[n:]
	}
	o.Launch = recent
	if n := len(o.Missed) - max(missedLimit, 0); n > 0 {
		o.MissedMore = int64(n)
		o.MissedLast = o.Missed[n-1]
		o.Missed = o.Missed[n:]
	}
	return o
}

// Prev returns the last tick of c strictly before t, and false when there
// is none within five years.
func (c *Cron) Prev(t time.Time) (time.Time, bool) {
	for span := time.Hour; span <= 5*366*24*time.Hour; span *= 4 {
		var last time.Time
		for from := t.Add(-span); ; {
			next, ok := c.Next(from)
			if !ok || !next.Before(t) {
				break
			}
			last, from = next, next
		}
		if !last.IsZero() {
			return last, true
		}
	}
	return time.Time{}, false
}

// ClosedWindows returns the index range [lo, hi) of the windows of ts that
// closed in (prev, at]: the partitions a tick at at targets when its
// previous tick was at prev. An hourly cron on an hourly asset targets the
// hour that just ended; a daily cron at 00:05 on an hourly asset the 24
// hours of the day before. The range is clamped to [0, n), n the space's
// length; empty (lo == hi) when no window closed.
func ClosedWindows(ts TimeScheme, n int64, prev, at time.Time) (lo, hi int64) {
	lo, hi = ts.IndexAt(prev), ts.IndexAt(at)
	lo, hi = min(max(lo, 0), n), min(max(hi, 0), n)
	return lo, max(lo, hi)
}

// WindowsWithin returns the index range [lo, hi) of the windows of ts that
// closed within d before at (a trailing window, such as the last 7 days
// of a daily asset), clamped to [0, n).
func WindowsWithin(ts TimeScheme, n int64, at time.Time, d time.Duration) (lo, hi int64) {
	return ClosedWindows(ts, n, at.Add(-d), at)
}
