package catalog

import "time"

// dayMapper maps the windows of an upstream day-based time scheme (daily,
// weekly, monthly) to the downstream's, when both are day-based and in one
// timezone, with integer arithmetic on civil day numbers: their windows
// start at local midnights, so upstream window u covers the civil days
// firstDay(u) … firstDay(u+1)-1, and the downstream index of a civil day is
// arithmetic too. The result is what the time-window mapping computes
// through instants (IndexAt of WindowStart), without building a time.Time
// per partition. ok is false for other schemes.
func dayMapper(down, up Scheme) (m func(u int64) (lo, hi int64), ok bool) {
	d, dOK := down.(*timeScheme)
	u, uOK := up.(*timeScheme)
	if !dOK || !uOK || d.unit == KindHourly || u.unit == KindHourly || d.loc.String() != u.loc.String() {
		return nil, false
	}
	return func(i int64) (int64, int64) {
		return d.dayIndex(u.firstDay(i)), d.dayIndex(u.firstDay(i+1) - 1)
	}, true
}

// firstDay returns the civil day number (days since 1970-01-01) of window
// i's first day.
func (s *timeScheme) firstDay(i int64) int64 {
	switch s.unit {
	case KindDaily:
		return s.startDays + i
	case KindWeekly:
		return s.startDays + 7*i
	default: // monthly
		m := s.startMon + i
		y := floorDiv(m, 12)
		return daysFromCivil(int(y), time.Month(m-12*y+1), 1)
	}
}

// dayIndex returns the index of the window containing civil day day.
func (s *timeScheme) dayIndex(day int64) int64 {
	switch s.unit {
	case KindDaily:
		return day - s.startDays
	case KindWeekly:
		return floorDiv(day-s.startDays, 7)
	default: // monthly
		y, m := civilMonth(day)
		return y*12 + m - 1 - s.startMon
	}
}

// civilMonth returns the year and month (1-12) of civil day number z
// (Howard Hinnant's civil_from_days).
func civilMonth(z int64) (y, m int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	m = mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m
}
