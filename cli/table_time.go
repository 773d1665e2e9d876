package cli

import "time"

// tableTimeLayout is how the CLI writes a time in its tables and sentences,
// every command alike: to the second, with its zone, "2025-01-15 12:00:05Z"
// in UTC or "2025-01-15 13:00:05+01:00" in a schedule's zone. --json keeps
// the API's RFC 3339 with milliseconds.
const tableTimeLayout = "2006-01-02 15:04:05Z07:00"

// tableTime writes an API time (RFC 3339) in tableTimeLayout, in the zone
// it was written in (UTC, or a schedule's local time); "-" for none, the
// text as it is when it is not such a time.
func tableTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return orDash(s)
	}
	return t.Format(tableTimeLayout)
}

// tableTimePtr is tableTime of an optional API time ("-" for nil).
func tableTimePtr(s *string) string {
	if s == nil {
		return "-"
	}
	return tableTime(*s)
}

// timeCell writes t in tableTimeLayout in UTC.
func timeCell(t time.Time) string {
	return t.UTC().Format(tableTimeLayout)
}

// msTimeOr is timeCell of a time in Unix milliseconds, or none when nil.
func msTimeOr(ms *int64, none string) string {
	if ms == nil {
		return none
	}
	return timeCell(time.UnixMilli(*ms))
}
