package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Cron is a schedule's cron expression evaluated in its time zone.
//
// Parsing is github.com/netresearch/go-cron's (a maintained fork of
// robfig/cron). The tick arithmetic is ours: the library's Next, given a zone
// with daylight saving time, fires a daily 02:30 at 03:30 on spring-forward
// day and a daily 01:30 twice on fall-back day, against the rules a data
// engineer expects (and Tessera states in its README):
//
//   - a wall-clock time that does not exist (02:30 when clocks jump from
//     02:00 to 03:00) fires once, at the first instant after the gap;
//   - a wall-clock time that happens twice (01:30 when clocks go back from
//     02:00 to 01:00) fires once, at its first occurrence;
//   - a cron that fires in every hour of the day (hourly or more often)
//     fires at every real instant whose wall clock matches: both 01:00s of
//     fall-back day, as hourly partitions exist for both, and none for the
//     hour that does not exist.
//
// The library only matches wall-clock times (its schedule is evaluated in
// UTC, which has no gaps or folds); Cron maps each matching wall-clock time
// to the instants it names in the zone.
type Cron struct {
	expr      string
	loc       *time.Location
	spec      *cron.SpecSchedule
	everyHour bool
}

// CronFieldNames name the fields of a cron expression: five (minute to day
// of week), or six with seconds first.
var CronFieldNames = []string{"second", "minute", "hour", "day of month", "month", "day of week"}

// CronError says what is wrong with a cron expression or time zone.
type CronError struct {
	Expr  string
	Field string // "second" … "day of week"; "" when the expression as a whole is wrong
	Value string // the field's text
	Msg   string
}

func (e *CronError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("cron %q: %s field %q: %s", e.Expr, e.Field, e.Value, e.Msg)
	}
	return fmt.Sprintf("cron %q: %s", e.Expr, e.Msg)
}

var cronParser = cron.MustNewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses expr (five fields, or six with seconds first, or a
// descriptor such as @daily) to be evaluated in the IANA time zone tz ("":
// UTC). Day of month and day of week, when both are restricted, match
// either (as in standard cron: "0 0 1 * MON" is the 1st and every Monday).
func ParseCron(expr, tz string) (*Cron, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || strings.EqualFold(tz, "local") {
			return nil, &CronError{Expr: expr, Msg: fmt.Sprintf("unknown time zone %q; use an IANA name such as UTC, Europe/Berlin or America/New_York", tz)}
		}
		loc = l
	}
	trimmed := strings.TrimSpace(expr)
	if trimmed == "" {
		return nil, &CronError{Expr: expr, Msg: "empty; write five fields (minute hour day-of-month month day-of-week), six with seconds first, or a descriptor such as @daily"}
	}
	upper := strings.ToUpper(trimmed)
	if strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, &CronError{Expr: expr, Msg: "set the time zone with the schedule's timezone key, not inside the cron expression"}
	}
	if strings.HasPrefix(trimmed, "@every") {
		return nil, &CronError{Expr: expr, Msg: "@every is an interval, not a calendar schedule; write it as fields (for example */10 * * * * * for every 10 seconds)"}
	}
	s, err := cronParser.Parse(trimmed)
	if err != nil {
		return nil, cronFieldError(expr, trimmed, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, &CronError{Expr: expr, Msg: "not a calendar schedule"}
	}
	// Wall-clock arithmetic: the library matches in UTC, Cron maps to loc.
	spec.Location = time.UTC
	spec.DowOrDom = true
	c := &Cron{expr: trimmed, loc: loc, spec: spec, everyHour: true}
	for h := 0; h < 24; h++ {
		if spec.Hour&(1<<uint(h)) == 0 {
			c.everyHour = false
		}
	}
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, &CronError{Expr: expr, Msg: "it never fires (no day matches, such as February 30)"}
	}
	return c, nil
}

// cronFieldError finds which field of expr the parser refused: it parses
// each field alone, every other field a wildcard.
func cronFieldError(expr, trimmed string, err error) error {
	fields := strings.Fields(trimmed)
	if strings.HasPrefix(trimmed, "@") {
		return &CronError{Expr: expr, Msg: fmt.Sprintf("unknown descriptor %q; use @yearly, @monthly, @weekly, @daily or @hourly", trimmed)}
	}
	names := CronFieldNames[1:]
	switch len(fields) {
	case 5:
	case 6:
		names = CronFieldNames
	default:
		return &CronError{Expr: expr, Msg: fmt.Sprintf("has %d fields; write five (minute hour day-of-month month day-of-week) or six with seconds first", len(fields))}
	}
	for i, f := range fields {
		probe := make([]string, len(fields))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = f
		if _, perr := cronParser.Parse(strings.Join(probe, " ")); perr != nil {
			return &CronError{Expr: expr, Field: names[i], Value: f, Msg: cronReason(perr)}
		}
	}
	return &CronError{Expr: expr, Msg: cronReason(err)}
}

// cronReason is the parser's complaint without its own prefix.
func cronReason(err error) string {
	msg := err.Error()
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		msg = u.Error()
	}
	return msg
}

// String is the expression as parsed.
func (c *Cron) String() string { return c.expr }

// Location is the zone the expression is evaluated in.
func (c *Cron) Location() *time.Location { return c.loc }

// maxShift bounds how far a zone's clock moves at a transition (real zones
// move by one hour, a few by 30 minutes or two hours).
const maxShift = 3 * time.Hour

// Next returns the first instant strictly after after at which the schedule
// fires, and false when it never fires again (within the parser's search
// horizon of five years).
func (c *Cron) Next(after time.Time) (time.Time, bool) {
	wall := wallOf(after, c.loc)
	from := wall
	if c.transitionNear(after) {
		// Around a fall-back the wall clock goes back: a later instant
		// can have an earlier wall-clock time than after's.
		from = wall.Add(-maxShift)
	}
	var best time.Time
	cand := c.spec.Next(from.Add(-time.Second))
	for n := 0; !cand.IsZero() && n < 200000; n++ {
		for _, t := range c.instants(cand) {
			if t.After(after) && (best.IsZero() || t.Before(best)) {
				best = t
			}
		}
		if !best.IsZero() && (!c.transitionNear(best) || cand.Sub(wallOf(best, c.loc)) >= maxShift) {
			return best, true
		}
		cand = c.spec.Next(cand)
	}
	return best, !best.IsZero()
}

// NextN returns the next n instants after after.
func (c *Cron) NextN(after time.Time, n int) []time.Time {
	var out []time.Time
	for t := after; len(out) < n; {
		next, ok := c.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// Between returns the instants in (from, to], oldest first, at most limit
// of them (limit <= 0: no bound); more is true when there were more.
func (c *Cron) Between(from, to time.Time, limit int) (ticks []time.Time, more bool) {
	for t := from; ; {
		next, ok := c.Next(t)
		if !ok || next.After(to) {
			return ticks, false
		}
		if limit > 0 && len(ticks) == limit {
			return ticks, true
		}
		ticks = append(ticks, next)
		t = next
	}
}

// transitionNear reports whether the zone's offset changes within maxShift
// of t.
func (c *Cron) transitionNear(t time.Time) bool {
	_, a := t.Add(-maxShift).In(c.loc).Zone()
	_, b := t.Add(maxShift).In(c.loc).Zone()
	return a != b
}

// wallOf is t's wall clock in loc, as a UTC time (no gaps, no folds).
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// instants maps the wall-clock time w (as UTC) to the instants at which the
// schedule fires for it in c's zone, by the rules in Cron's doc.
func (c *Cron) instants(w time.Time) []time.Time {
	guess := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, c.loc)
	offsets := map[int]bool{}
	for _, d := range []time.Duration{-12 * time.Hour, 0, 12 * time.Hour} {
		_, off := guess.Add(d).Zone()
		offsets[off] = true
	}
	var out []time.Time
	for off := range offsets {
		t := time.Unix(w.Unix()-int64(off), 0)
		if wallOf(t, c.loc).Equal(w) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	switch {
	case len(out) == 0 && c.everyHour:
		return nil // no such instant, and no such hourly partition
	case len(out) == 0:
		// In a gap: the first instant after it is where the zone's period
		// containing w (read with the offset before the gap) begins.
		_, before := guess.Add(-12 * time.Hour).Zone()
		t := time.Unix(w.Unix()-int64(before), 0).In(c.loc)
		start, _ := t.ZoneBounds()
		if start.IsZero() {
			return []time.Time{t}
		}
		return []time.Time{start}
	case len(out) > 1 && !c.everyHour:
		return out[:1] // in a fold: its first occurrence
	}
	return out
}

// TickID is the id of a schedule's tick for the instant it was scheduled
// for: "{schedule}:{unix seconds}".
func TickID(schedule string, scheduledFor time.Time) string {
	return fmt.Sprintf("%s:%d", schedule, scheduledFor.Unix())
}
