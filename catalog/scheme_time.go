package catalog

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // self-contained timezone database (no system zoneinfo needed)
)

// TimeParams are the parameters of a time-window scheme as declared in the
// workspace file.
type TimeParams struct {
	Unit      Kind   // hourly, daily, weekly or monthly
	Start     string // required: "2025-01-01" (hourly: "2025-01-01-00:00")
	End       string // optional, exclusive
	Timezone  string // IANA name, default UTC
	EndOffset int64  // extra windows past now (may be negative)
	KeyFormat string // strftime; default %Y-%m-%d-%H:%M (hourly) or %Y-%m-%d
}

type timeScheme struct {
	unit      Kind
	loc       *time.Location
	start     time.Time // start instant of window 0
	startUnix int64     // hourly
	sy        int       // civil start date (daily/weekly/monthly)
	sm        time.Month
	sd        int
	startDays int64 // days from civil epoch of the start date
	startMon  int64 // y*12+m-1 of the start date
	hasEnd    bool
	end       time.Time
	endIdx    int64 // number of windows that end at or before end
	endOffset int64
	layout    string
	strftime  string
	digits    *digitLayout // nil: keys are read by the time package only
	startStr  string
	endStr    string
}

var hourlyStartLayouts = []string{
	"2006-01-02-15:04", "2006-01-02T15:04", "2006-01-02 15:04",
	"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02",
}

// NewTimeScheme builds an hourly, daily, weekly or monthly scheme.
// Errors are *ParamError naming the offending parameter.
func NewTimeScheme(p TimeParams) (TimeScheme, error) {
	if !p.Unit.IsTime() {
		return nil, paramErr("", "unknown time unit %q; use hourly, daily, weekly or monthly", p.Unit)
	}
	s := &timeScheme{unit: p.Unit, endOffset: p.EndOffset, startStr: p.Start, endStr: p.End}
	tz := p.Timezone
	if tz == "" {
		tz = "UTC"
	}
	if tz == "Local" {
		return nil, paramErr("timezone", "timezone Local depends on the server; use an IANA name like UTC or Europe/Berlin")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		tzErr := paramErr("timezone", "unknown timezone %q; use an IANA name like UTC or Europe/Berlin", tz)
		// Check the rest in UTC too, so that a bad start is not hidden
		// behind the bad timezone.
		q := p
		q.Timezone = "UTC"
		if _, err := NewTimeScheme(q); err != nil {
			return nil, errors.Join(tzErr, err)
		}
		return nil, tzErr
	}
	s.loc = loc
	s.strftime = p.KeyFormat
	if s.strftime == "" {
		s.strftime = DefaultDateKeyFormat
		if p.Unit == KindHourly {
			s.strftime = DefaultHourlyKeyFormat
		}
	}
	layout, err := strftimeToLayout(s.strftime)
	if err != nil {
		return nil, paramErr("key_format", "%v", err)
	}
	s.layout = layout

	if p.Start == "" {
		return nil, paramErr("start", "start is required, e.g. start: %s", exampleStart(p.Unit))
	}
	start, err := s.parseBound(p.Start, "start")
	if err != nil {
		return nil, err
	}
	if p.Unit == KindHourly {
		s.start = start
		s.startUnix = start.Unix()
	} else {
		s.sy, s.sm, s.sd = start.Date()
		if p.Unit == KindMonthly && s.sd != 1 {
			return nil, paramErr("start", "a monthly start must be the first day of a month, e.g. %04d-%02d-01", s.sy, s.sm)
		}
		s.startDays = daysFromCivil(s.sy, s.sm, s.sd)
		s.startMon = int64(s.sy)*12 + int64(s.sm) - 1
		s.start = localMidnight(s.sy, s.sm, s.sd, loc)
	}
	if p.End != "" {
		end, err := s.parseBound(p.End, "end")
		if err != nil {
			return nil, err
		}
		if p.Unit != KindHourly {
			y, m, d := end.Date()
			end = localMidnight(y, m, d, loc)
		}
		s.hasEnd, s.end = true, end
		s.endIdx = s.IndexAt(end)
		if s.endIdx <= 0 {
			return nil, paramErr("start", "start %s is not before end %s (the scheme needs at least one complete %s window)", p.Start, p.End, unitNoun(p.Unit))
		}
	}
	if p.Unit == KindHourly && !layoutHasOffset(layout) {
		if _, zend := s.start.ZoneBounds(); !zend.IsZero() && (!s.hasEnd || zend.Before(s.end)) {
			return nil, paramErr("timezone", "timezone %s changes its UTC offset (daylight saving), so hourly keys in the format %s cannot round-trip; use timezone: UTC or add an offset to key_format (e.g. \"%%Y-%%m-%%d-%%H:%%M%%z\")", tz, s.strftime)
		}
	}
	if err := s.checkRoundTrip(); err != nil {
		return nil, err
	}
	s.digits = compileDigitLayout(s.strftime, s.unit)
	return s, nil
}

func exampleStart(u Kind) string {
	if u == KindHourly {
		return `"2025-01-01-00:00"`
	}
	return "2025-01-01"
}

func unitNoun(u Kind) string {
	switch u {
	case KindHourly:
		return "hour"
	case KindDaily:
		return "day"
	case KindWeekly:
		return "week"
	}
	return "month"
}

// parseBound parses start/end. Hourly bounds are instants in loc; other units
// return a UTC civil date.
func (s *timeScheme) parseBound(v, param string) (time.Time, error) {
	if s.unit == KindHourly {
		for _, l := range append(hourlyStartLayouts, s.layout) {
			if t, err := time.ParseInLocation(l, v, s.loc); err == nil {
				if t.Second() != 0 || t.Nanosecond() != 0 {
					return time.Time{}, paramErr(param, "%s %s must be on a whole minute", param, v)
				}
				return t, nil
			}
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil && t.Second() == 0 && t.Nanosecond() == 0 {
			return t, nil
		}
		return time.Time{}, paramErr(param, "%s %s is not a date and time; use YYYY-MM-DD-HH:MM, e.g. \"2025-01-01-00:00\"", param, v)
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		if t2, err2 := time.Parse(time.RFC3339, v); err2 == nil && t2.Hour() == 0 && t2.Minute() == 0 && t2.Second() == 0 {
			y, m, d := t2.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
		}
		return time.Time{}, paramErr(param, "%s %s is not a date; use YYYY-MM-DD, e.g. 2025-01-01", param, v)
	}
	return t, nil
}

// checkRoundTrip verifies that keys of sample windows parse back to their window.
func (s *timeScheme) checkRoundTrip() error {
	samples := []int64{}
	for i := int64(0); i <= 60; i++ {
		samples = append(samples, i)
	}
	samples = append(samples, 100, 167, 168, 169, 365, 366, 400, 731, 1000, 1461, 8760, 8784, 10000, 100000)
	for _, i := range samples {
		if (s.hasEnd && i >= s.endIdx) || s.WindowStart(i).Year() > 9999 {
			continue
		}
		k := s.key(i)
		if strings.Contains(k, MultiSep) {
			return paramErr("key_format", "key_format %q produces keys containing '|' (reserved for multi-dimensional keys)", s.strftime)
		}
		if err := ValidateDynamicKey(k); err != nil {
			return paramErr("key_format", "key_format %q produces invalid keys like %q", s.strftime, k)
		}
		j, err := s.parseIndex(k)
		if err != nil || j != i {
			return paramErr("key_format", "key_format %q cannot round-trip %s keys (%q does not identify one %s); include %s", s.strftime, s.unit, k, unitNoun(s.unit), neededDirectives(s.unit))
		}
	}
	return nil
}

func neededDirectives(u Kind) string {
	switch u {
	case KindHourly:
		return "%Y, %m, %d, %H (and %M when the start is not on the hour)"
	case KindMonthly:
		return "%Y and %m"
	}
	return "%Y, %m and %d"
}

func (s *timeScheme) Kind() Kind               { return s.unit }
func (s *timeScheme) Unit() Kind               { return s.unit }
func (s *timeScheme) Location() *time.Location { return s.loc }
func (s *timeScheme) KeyFormat() string        { return s.layout }
func (s *timeScheme) StrftimeFormat() string   { return s.strftime }
func (s *timeScheme) Start() time.Time         { return s.start }
func (s *timeScheme) EndOffset() int64         { return s.endOffset }
func (s *timeScheme) End() time.Time {
	if !s.hasEnd {
		return time.Time{}
	}
	return s.end
}

func (s *timeScheme) Describe() string {
	d := fmt.Sprintf("%s since %s %s", s.unit, s.key(0), s.loc.String())
	if s.hasEnd {
		d += " until " + s.endStr
	}
	if s.endOffset != 0 {
		d += fmt.Sprintf(" (end offset %+d)", s.endOffset)
	}
	return d
}

// civil returns the civil (UTC-based) date of window i for day-based units.
func (s *timeScheme) civil(i int64) time.Time {
	switch s.unit {
	case KindDaily:
		return time.Date(s.sy, s.sm, s.sd+int(i), 0, 0, 0, 0, time.UTC)
	case KindWeekly:
		return time.Date(s.sy, s.sm, s.sd+7*int(i), 0, 0, 0, 0, time.UTC)
	default: // monthly
		return time.Date(s.sy, s.sm+time.Month(i), 1, 0, 0, 0, 0, time.UTC)
	}
}

func (s *timeScheme) key(i int64) string {
	var t time.Time
	if s.unit == KindHourly {
		t = time.Unix(s.startUnix+i*3600, 0).In(s.loc)
	} else {
		t = s.civil(i)
	}
	if s.digits != nil {
		// Digits written into the layout's template: what Format writes,
		// without parsing the layout for every key (a backfill formats
		// every partition's key).
		if k, ok := s.digits.write(t); ok {
			return k
		}
	}
	return t.Format(s.layout)
}

// formattedKey is key through the time package alone.
func (s *timeScheme) formattedKey(i int64) string {
	if s.unit == KindHourly {
		return time.Unix(s.startUnix+i*3600, 0).In(s.loc).Format(s.layout)
	}
	return s.civil(i).Format(s.layout)
}

func (s *timeScheme) WindowStart(i int64) time.Time {
	if s.unit == KindHourly {
		return time.Unix(s.startUnix+i*3600, 0).In(s.loc)
	}
	if s.loc == time.UTC {
		// Midnight UTC of the window's first civil day, by arithmetic
		// (the same Time as localMidnight's, without building a date).
		return time.Unix(s.firstDay(i)*86400, 0).UTC()
	}
	y, m, d := s.civil(i).Date()
	return localMidnight(y, m, d, s.loc)
}

func (s *timeScheme) IndexAt(t time.Time) int64 {
	if s.unit == KindHourly {
		return floorDiv(t.Unix()-s.startUnix, 3600)
	}
	y, m, d := t.In(s.loc).Date()
	return s.civilIndex(y, m, d)
}

func (s *timeScheme) civilIndex(y int, m time.Month, d int) int64 {
	switch s.unit {
	case KindDaily:
		return daysFromCivil(y, m, d) - s.startDays
	case KindWeekly:
		return floorDiv(daysFromCivil(y, m, d)-s.startDays, 7)
	default:
		return int64(y)*12 + int64(m) - 1 - s.startMon
	}
}

// parseIndex parses key with the layout and returns the window containing it
// (no canonical-form or bounds check).
func (s *timeScheme) parseIndex(key string) (int64, error) {
	if s.unit == KindHourly {
		t, err := time.ParseInLocation(s.layout, key, s.loc)
		if err != nil {
			return 0, err
		}
		return s.IndexAt(t), nil
	}
	t, err := time.Parse(s.layout, key)
	if err != nil {
		return 0, err
	}
	y, m, d := t.Date()
	return s.civilIndex(y, m, d), nil
}

func (s *timeScheme) WindowIndex(key string) (int64, error) {
	if i, ok := s.digitIndex(key); ok {
		return i, nil
	}
	return s.parsedWindowIndex(key)
}

// parsedWindowIndex is WindowIndex through the time package's parser and
// formatter.
func (s *timeScheme) parsedWindowIndex(key string) (int64, error) {
	i, err := s.parseIndex(key)
	if err != nil {
		return 0, keyErr(key, "expected %s key like %s", withArticle(string(s.unit)), s.key(0))
	}
	if i < 0 {
		return 0, keyErr(key, "before the first partition (%s)", s.key(0))
	}
	if s.hasEnd && i >= s.endIdx {
		return 0, keyErr(key, "after the last partition (%s)", s.key(s.endIdx-1))
	}
	if c := s.key(i); c != key {
		return 0, keyErr(key, "not the key of %s window; the window containing it is %s", withArticle(string(s.unit)), c)
	}
	return i, nil
}

func (s *timeScheme) ValidateKey(key string) error {
	_, err := s.WindowIndex(key)
	return err
}

// Len returns the number of windows in the space at now.
func (s *timeScheme) count(now time.Time) int64 {
	n := s.IndexAt(now) + s.endOffset
	if s.hasEnd && n > s.endIdx {
		n = s.endIdx
	}
	return max(n, 0)
}

func (s *timeScheme) Space(now time.Time, _ DynamicKeys) Space {
	return &timeSpace{s: s, n: s.count(now)}
}

type timeSpace struct {
	s *timeScheme
	n int64
}

func (sp *timeSpace) Len() int64 { return sp.n }

func (sp *timeSpace) Key(i int64) string {
	if i < 0 || i >= sp.n {
		return ""
	}
	return sp.s.key(i)
}

func (sp *timeSpace) Index(key string) (int64, error) {
	i, err := sp.s.WindowIndex(key)
	if err != nil {
		return 0, err
	}
	if i >= sp.n {
		if sp.n == 0 {
			return 0, keyErr(key, "the asset has no complete partition yet (the first, %s, completes at %s)", sp.s.key(0), sp.s.WindowStart(1-sp.s.endOffset).Format(time.RFC3339))
		}
		return 0, keyErr(key, "after the last partition (%s)", sp.s.key(sp.n-1))
	}
	return i, nil
}

func (sp *timeSpace) Keys(offset, limit int64) []string {
	lo, hi := clampWindow(offset, limit, sp.n)
	out := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, sp.s.key(i))
	}
	return out
}

// clampWindow clamps [offset, offset+limit) to [0, n).
func clampWindow(offset, limit, n int64) (lo, hi int64) {
	lo = max(offset, 0)
	if lo > n {
		lo = n
	}
	if limit <= 0 {
		return lo, lo
	}
	hi = n
	if limit < n-lo {
		hi = lo + limit
	}
	return lo, hi
}

// localMidnight returns the first instant of the civil day y-m-d in loc
// (the end of the gap when midnight is skipped by a DST change).
func localMidnight(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if ty, tm, td := t.Date(); ty != y || tm != m || td != d {
		if _, zend := t.ZoneBounds(); !zend.IsZero() {
			t = zend
		}
	}
	return t
}

// daysFromCivil returns the number of days since 1970-01-01 of a proleptic
// Gregorian date (Howard Hinnant's algorithm; normalises m and d via time.Date
// semantics first).
func daysFromCivil(y int, m time.Month, d int) int64 {
	yy := int64(y)
	mm := int64(m)
	if mm <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := (mm + 9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
