package catalog

import (
	"errors"
	"testing"
	"time"
)

func TestTimeSchemes(t *testing.T) {
	tests := []struct {
		name        string
		p           TimeParams
		now         time.Time
		n           int64
		first, last string
		describe    string
	}{
		{"hourly utc", TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"}, at(t, "2025-01-02 00:30", "UTC"), 24, "2025-01-01-00:00", "2025-01-01-23:00", "hourly since 2025-01-01-00:00 UTC"},
		{"hourly end offset", TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00", EndOffset: 2}, at(t, "2025-01-02 00:30", "UTC"), 26, "2025-01-01-00:00", "2025-01-02-01:00", ""},
		{"hourly before start", TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"}, at(t, "2024-12-01 00:00", "UTC"), 0, "", "", ""},
		{"hourly half-hour zone", TimeParams{Unit: KindHourly, Start: "2025-01-01-00:30", Timezone: "Asia/Kolkata"}, at(t, "2025-01-01 03:29", "Asia/Kolkata"), 2, "2025-01-01-00:30", "2025-01-01-01:30", ""},
		{"hourly with offset format", TimeParams{Unit: KindHourly, Start: "2025-03-30-00:00", Timezone: "Europe/Berlin", KeyFormat: "%Y-%m-%d-%H:%M%z"}, at(t, "2025-03-30 04:00", "Europe/Berlin"), 3, "2025-03-30-00:00+0100", "2025-03-30-03:00+0200", ""},
		{"daily berlin", TimeParams{Unit: KindDaily, Start: "2025-01-01", Timezone: "Europe/Berlin"}, at(t, "2025-01-31 23:59", "Europe/Berlin"), 30, "2025-01-01", "2025-01-30", "daily since 2025-01-01 Europe/Berlin"},
		{"daily end", TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2025-02-01"}, at(t, "2030-01-01", "UTC"), 31, "2025-01-01", "2025-01-31", "daily since 2025-01-01 UTC until 2025-02-01"},
		{"daily end offset capped by end", TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2025-01-10", EndOffset: 5}, at(t, "2025-01-08", "UTC"), 9, "2025-01-01", "2025-01-09", ""},
		{"daily key format", TimeParams{Unit: KindDaily, Start: "2025-01-01", KeyFormat: "%Y%m%d"}, at(t, "2025-01-03", "UTC"), 2, "20250101", "20250102", ""},
		{"weekly", TimeParams{Unit: KindWeekly, Start: "2025-01-06"}, at(t, "2025-02-03", "UTC"), 4, "2025-01-06", "2025-01-27", "weekly since 2025-01-06 UTC"},
		{"weekly partial", TimeParams{Unit: KindWeekly, Start: "2025-01-06"}, at(t, "2025-02-02 23:00", "UTC"), 3, "2025-01-06", "2025-01-20", ""},
		{"monthly", TimeParams{Unit: KindMonthly, Start: "2025-01-01", Timezone: "America/New_York"}, at(t, "2026-01-01", "America/New_York"), 12, "2025-01-01", "2025-12-01", ""},
		{"monthly before end of month", TimeParams{Unit: KindMonthly, Start: "2025-01-01"}, at(t, "2025-03-15", "UTC"), 2, "2025-01-01", "2025-02-01", ""},
		{"monthly format", TimeParams{Unit: KindMonthly, Start: "2025-01-01", KeyFormat: "%Y-%m"}, at(t, "2025-03-15", "UTC"), 2, "2025-01", "2025-02", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustTime(t, tc.p)
			sp := s.Space(tc.now, nil)
			if sp.Len() != tc.n {
				t.Fatalf("Len = %d, want %d", sp.Len(), tc.n)
			}
			if got := sp.Key(0); got != tc.first {
				t.Errorf("first = %q, want %q", got, tc.first)
			}
			if got := sp.Key(tc.n - 1); got != tc.last {
				t.Errorf("last = %q, want %q", got, tc.last)
			}
			if tc.describe != "" && s.Describe() != tc.describe {
				t.Errorf("Describe = %q, want %q", s.Describe(), tc.describe)
			}
			for i := int64(0); i < tc.n; i++ {
				k := sp.Key(i)
				if j, err := sp.Index(k); err != nil || j != i {
					t.Fatalf("Index(%q) = %d, %v; want %d", k, j, err, i)
				}
			}
			if sp.Key(-1) != "" || sp.Key(tc.n) != "" {
				t.Errorf("Key out of range should be empty")
			}
		})
	}
}

func TestDailyDST(t *testing.T) {
	s := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-03-29", Timezone: "Europe/Berlin"})
	hours := func(i int64) float64 { return s.WindowStart(i + 1).Sub(s.WindowStart(i)).Hours() }
	if h := hours(0); h != 24 {
		t.Errorf("2025-03-29 has %v hours", h)
	}
	if h := hours(1); h != 23 {
		t.Errorf("2025-03-30 (spring forward) has %v hours, want 23", h)
	}
	i, err := s.WindowIndex("2025-10-26")
	if err != nil {
		t.Fatal(err)
	}
	if h := hours(i); h != 25 {
		t.Errorf("2025-10-26 (fall back) has %v hours, want 25", h)
	}
	if got := s.WindowStart(1).Format(time.RFC3339); got != "2025-03-30T00:00:00+01:00" {
		t.Errorf("WindowStart(1) = %s", got)
	}
	if got := s.WindowStart(2).Format(time.RFC3339); got != "2025-03-31T00:00:00+02:00" {
		t.Errorf("WindowStart(2) = %s", got)
	}
	// IndexAt across the transition.
	if got := s.IndexAt(at(t, "2025-03-30 23:59", "Europe/Berlin")); got != 1 {
		t.Errorf("IndexAt(2025-03-30 23:59) = %d", got)
	}
	if got := s.IndexAt(at(t, "2025-10-26 23:30", "Europe/Berlin")); got != i {
		t.Errorf("IndexAt(2025-10-26 23:30) = %d, want %d", got, i)
	}
	// Space at a Berlin midnight right after the long day.
	sp := s.Space(at(t, "2025-10-27", "Europe/Berlin"), nil)
	if sp.Key(sp.Len()-1) != "2025-10-26" {
		t.Errorf("last key = %s", sp.Key(sp.Len()-1))
	}
	// A zone where midnight is skipped (Santiago springs forward at 00:00).
	sc := mustTime(t, TimeParams{Unit: KindDaily, Start: "2024-09-07", Timezone: "America/Santiago"})
	ws := sc.WindowStart(1) // 2024-09-08 starts at 01:00
	if y, m, d := ws.Date(); y != 2024 || m != 9 || d != 8 {
		t.Errorf("Santiago 2024-09-08 window starts %s", ws)
	}
	if sc.IndexAt(ws) != 1 || sc.IndexAt(ws.Add(-time.Nanosecond)) != 0 {
		t.Errorf("Santiago IndexAt around gap wrong")
	}
}

func TestHourlyDSTRejected(t *testing.T) {
	_, err := NewTimeScheme(TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00", Timezone: "Europe/Berlin"})
	wantParamErr(t, err, "timezone", "use timezone: UTC or add an offset")
	// A zone without transitions after start is fine.
	mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00", Timezone: "Asia/Tokyo"})
	// An end before the next transition is fine too.
	mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00", End: "2025-03-01-00:00", Timezone: "Europe/Berlin"})
	// With an offset, October's repeated hour gets two distinct keys.
	s := mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-10-26-00:00", Timezone: "Europe/Berlin", KeyFormat: "%Y-%m-%d-%H:%M%z"})
	sp := s.Space(at(t, "2025-10-27", "Europe/Berlin"), nil)
	if sp.Len() != 25 {
		t.Fatalf("Len = %d, want 25", sp.Len())
	}
	if sp.Key(2) != "2025-10-26-02:00+0200" || sp.Key(3) != "2025-10-26-02:00+0100" {
		t.Errorf("keys around fall back: %v", sp.Keys(1, 4))
	}
}

func TestTimeSchemeParamErrors(t *testing.T) {
	tests := []struct {
		p             TimeParams
		param, substr string
	}{
		{TimeParams{Unit: KindDaily}, "start", "start is required"},
		{TimeParams{Unit: KindDaily, Start: "2025-13-01"}, "start", "start 2025-13-01 is not a date; use YYYY-MM-DD"},
		{TimeParams{Unit: KindHourly, Start: "yesterday"}, "start", "is not a date and time"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2024-01-01"}, "start", "is not before end"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2025-01-01"}, "start", "is not before end"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", Timezone: "Mars/Olympus"}, "timezone", "unknown timezone"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", KeyFormat: "%Y-%m"}, "key_format", "cannot round-trip"},
		{TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00", KeyFormat: "%Y-%m-%d"}, "key_format", "cannot round-trip"},
		{TimeParams{Unit: KindHourly, Start: "2025-01-01-00:30", KeyFormat: "%Y-%m-%d-%H"}, "key_format", "cannot round-trip"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", KeyFormat: "%Y|%m|%d"}, "key_format", "'|'"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", KeyFormat: "%Y-%m-%e"}, "key_format", "%e"},
		{TimeParams{Unit: KindDaily, Start: "2025-01-01", KeyFormat: "daily"}, "key_format", "no strftime directive"},
		{TimeParams{Unit: KindMonthly, Start: "2025-01-15"}, "start", "first day of a month"},
	}
	for _, tc := range tests {
		_, err := NewTimeScheme(tc.p)
		wantParamErr(t, err, tc.param, tc.substr)
	}
}

func TestTimeKeyErrors(t *testing.T) {
	s := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01", Timezone: "Europe/Berlin"})
	sp := s.Space(at(t, "2026-11-22", "Europe/Berlin"), nil)
	_, err := sp.Index("2026-11-22")
	wantKeyErr(t, err, `partition key "2026-11-22" is not valid for this asset: after the last partition (2026-11-21)`)
	wantKeyErr(t, s.ValidateKey("2024-12-31"), "before the first partition (2025-01-01)")
	wantKeyErr(t, s.ValidateKey("2025/01/31"), "expected a daily key like 2025-01-01")
	wantKeyErr(t, s.ValidateKey("+025-01-31"), "expected")
	wantKeyErr(t, s.ValidateKey(""), "expected")
	h := mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"})
	wantKeyErr(t, h.ValidateKey("2025-01-01-00:30"), "not the key of an hourly window; the window containing it is 2025-01-01-00:00")
	wantKeyErr(t, h.ValidateKey("2025-01-01 00:00"), "expected an hourly key like 2025-01-01-00:00")
	w := mustTime(t, TimeParams{Unit: KindWeekly, Start: "2025-01-06"})
	wantKeyErr(t, w.ValidateKey("2025-01-07"), "the window containing it is 2025-01-06")
	e := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01", End: "2025-02-01"})
	wantKeyErr(t, e.ValidateKey("2025-02-01"), "after the last partition (2025-01-31)")
	if err := e.ValidateKey("2025-01-31"); err != nil {
		t.Error(err)
	}
	// Not complete yet.
	_, err = h.Space(at(t, "2025-01-01 00:10", "UTC"), nil).Index("2025-01-01-00:00")
	wantKeyErr(t, err, "no complete partition yet")
}

func TestStaticScheme(t *testing.T) {
	s := mustStatic(t, "acme", "globex", "initech")
	if s.Describe() != "static: acme, globex, initech" {
		t.Errorf("Describe = %q", s.Describe())
	}
	sp := s.Space(time.Now(), nil)
	if sp.Len() != 3 || sp.Key(1) != "globex" {
		t.Fatalf("Len %d Key(1) %q", sp.Len(), sp.Key(1))
	}
	if i, err := sp.Index("initech"); err != nil || i != 2 {
		t.Errorf("Index(initech) = %d, %v", i, err)
	}
	_, err := sp.Index("hooli")
	wantKeyErr(t, err, "not one of the static keys (acme, globex, initech)")
	wantKeyErr(t, s.ValidateKey("ACME"), "not one of")
	if got := sp.Keys(1, 10); len(got) != 2 || got[0] != "globex" {
		t.Errorf("Keys(1,10) = %v", got)
	}
	if got := sp.Keys(5, 10); len(got) != 0 {
		t.Errorf("Keys(5,10) = %v", got)
	}
	for _, bad := range [][]string{nil, {"a", "a"}, {""}, {"a|b"}, {" a"}, {"a\n"}} {
		if _, err := NewStaticScheme(bad); err == nil {
			t.Errorf("NewStaticScheme(%q) accepted", bad)
		}
	}
}

func TestDynamicScheme(t *testing.T) {
	s := mustDynamic(t, "partners")
	if s.Describe() != "dynamic (partners)" || s.Set() != "partners" {
		t.Errorf("Describe = %q", s.Describe())
	}
	dyn := DynamicKeysMap{"partners": {"p1", "p2", "p1", "p3"}}
	sp := s.Space(time.Now(), dyn)
	if sp.Len() != 3 || sp.Key(2) != "p3" {
		t.Fatalf("Len %d, keys %v", sp.Len(), sp.Keys(0, 10))
	}
	_, err := sp.Index("p9")
	wantKeyErr(t, err, `not a registered key of the dynamic partition set "partners"`)
	if err := s.ValidateKey("p9"); err != nil {
		t.Errorf("ValidateKey(p9) = %v (syntax only)", err)
	}
	long := make([]byte, 201)
	for i := range long {
		long[i] = 'x'
	}
	for _, bad := range []string{"", "a|b", " a", "a ", "a\tb", "a\x00", string(long), "\xff"} {
		if s.ValidateKey(bad) == nil {
			t.Errorf("ValidateKey(%q) accepted", bad)
		}
	}
	if sp := s.Space(time.Now(), nil); sp.Len() != 0 {
		t.Errorf("nil DynamicKeys: Len %d", sp.Len())
	}
}

func dailyRegion(t testing.TB) MultiScheme {
	return mustMulti(t,
		Dimension{"date", mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})},
		Dimension{"region", mustStatic(t, "eu", "us", "apac")})
}

func TestMultiScheme(t *testing.T) {
	m := dailyRegion(t)
	if m.Describe() != "daily × region" || m.TimeDim() != 0 {
		t.Errorf("Describe = %q, TimeDim %d", m.Describe(), m.TimeDim())
	}
	sp := m.Space(at(t, "2025-01-11", "UTC"), nil)
	if sp.Len() != 30 {
		t.Fatalf("Len = %d", sp.Len())
	}
	want := []string{"2025-01-01|eu", "2025-01-01|us", "2025-01-01|apac", "2025-01-02|eu"}
	for i, k := range want {
		if sp.Key(int64(i)) != k {
			t.Errorf("Key(%d) = %q, want %q", i, sp.Key(int64(i)), k)
		}
	}
	if sp.Key(29) != "2025-01-10|apac" {
		t.Errorf("last = %q", sp.Key(29))
	}
	if i, err := sp.Index("2025-01-03|us"); err != nil || i != 7 {
		t.Errorf("Index = %d, %v", i, err)
	}
	_, err := sp.Index("2025-01-03|mars")
	wantKeyErr(t, err, "dimension region")
	_, err = sp.Index("2025-01-03")
	wantKeyErr(t, err, "expected 2 parts separated by '|' (date|region)")
	wantKeyErr(t, m.ValidateKey("2025-01-03|us|x"), "expected 2 parts")
	if parts, err := m.Split("2025-01-03|us"); err != nil || parts[1] != "us" {
		t.Errorf("Split = %v, %v", parts, err)
	}
	if !m.MatchDims("2025-01-03|us", map[string][]string{"region": {"eu", "us"}}) ||
		m.MatchDims("2025-01-03|apac", map[string][]string{"region": {"eu", "us"}}) ||
		!m.MatchDims("2025-01-03|apac", map[string][]string{"region": nil}) ||
		m.MatchDims("2025-01-03|apac", map[string][]string{"planet": {"x"}}) {
		t.Error("MatchDims")
	}
	// Invalid multi schemes.
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	st := mustStatic(t, "a")
	for _, dims := range [][]Dimension{
		{{"date", d}},
		{{"date", d}, {"date2", d}},
		{{"r", st}, {"date", d}},
		{{"r", st}, {"r", st}},
		{{"r", st}, {"m", m}},
	} {
		if _, err := NewMultiScheme(dims); err == nil {
			t.Errorf("NewMultiScheme(%v) accepted", dims)
		}
	}
	// Static × dynamic.
	sd := mustMulti(t, Dimension{"region", st}, Dimension{"partner", mustDynamic(t, "partners")})
	if sd.TimeDim() != -1 || sd.Describe() != "region × partner" {
		t.Errorf("TimeDim %d, %q", sd.TimeDim(), sd.Describe())
	}
	sp2 := sd.Space(time.Now(), DynamicKeysMap{"partners": {"x", "y"}})
	if sp2.Len() != 2 || sp2.Key(1) != "a|y" {
		t.Errorf("static×dynamic keys %v", sp2.Keys(0, 10))
	}
}

func TestParseRange(t *testing.T) {
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	dsp := d.Space(at(t, "2025-03-01", "UTC"), nil)
	m := dailyRegion(t)
	msp := m.Space(at(t, "2025-01-11", "UTC"), nil)
	for _, c := range []struct {
		name       string
		sp         Space
		s          Scheme
		start, end string
		lo, hi     int64
	}{
		{"range", dsp, d, "2025-01-05", "2025-01-10", 4, 9},
		{"full range", dsp, d, "", "", 0, 58},
		{"time-only range", msp, m, "2025-01-02", "2025-01-03", 3, 8},
		{"mixed range", msp, m, "2025-01-02|us", "2025-01-03", 4, 8},
		{"single", msp, m, "2025-01-02|us", "2025-01-02|us", 4, 4},
	} {
		if lo, hi, err := ParseRange(c.sp, c.s, c.start, c.end); err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%s = %d..%d, %v; want %d..%d", c.name, lo, hi, err, c.lo, c.hi)
		}
	}
	_, _, err := ParseRange(dsp, d, "2025-02-01", "2025-01-01")
	var re *RangeError
	if !errors.As(err, &re) || err.Error() != "end 2025-01-01 is before start 2025-02-01" {
		t.Errorf("got %v", err)
	}
	_, _, err = ParseRange(dsp, d, "2025-01-01", "2025-03-01")
	wantKeyErr(t, err, "after the last partition (2025-02-28)")
	_, _, err = ParseRange(msp, m, "2025-01-02", "2025-01-20")
	wantKeyErr(t, err, "dimension date: after the last partition (2025-01-10)")
	_, _, err = ParseRange(msp, m, "2025-01-03|eu", "2025-01-02|apac")
	if !errors.As(err, &re) {
		t.Errorf("want RangeError, got %v", err)
	}
}

func TestKeyErrorMessage(t *testing.T) {
	e := &KeyError{Key: "X", Reason: "expected format 2025-01-31"}
	if e.Error() != `partition key "X" is not valid for this asset: expected format 2025-01-31` {
		t.Error(e.Error())
	}
}

func TestBigHourlySpace(t *testing.T) {
	s := mustTime(t, TimeParams{Unit: KindHourly, Start: "1900-01-01-00:00"})
	now := at(t, "2025-06-01 12:30", "UTC")
	sp := s.Space(now, nil)
	start := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	want := int64(now.Sub(start) / time.Hour)
	if sp.Len() != want || want < 1_000_000 {
		t.Fatalf("Len = %d, want %d (>= 1e6)", sp.Len(), want)
	}
	for _, i := range []int64{0, 1, want / 2, want - 2, want - 1} {
		k := sp.Key(i)
		exp := start.Add(time.Duration(i) * time.Hour).Format("2006-01-02-15:04")
		if k != exp {
			t.Errorf("Key(%d) = %s, want %s", i, k, exp)
		}
		if j, err := sp.Index(k); err != nil || j != i {
			t.Errorf("Index(%s) = %d, %v", k, j, err)
		}
	}
	if sp.Key(want-1) != "2025-06-01-11:00" {
		t.Errorf("last = %s", sp.Key(want-1))
	}
	if got := sp.Keys(want-3, 10); len(got) != 3 || got[2] != "2025-06-01-11:00" {
		t.Errorf("Keys tail = %v", got)
	}
	m := mustMulti(t, Dimension{"hour", s}, Dimension{"region", mustStatic(t, "eu", "us", "apac")})
	msp := m.Space(now, nil)
	if msp.Len() != 3*want || msp.Key(3*want-1) != "2025-06-01-11:00|apac" {
		t.Errorf("multi big: %d %s", msp.Len(), msp.Key(3*want-1))
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		350 * time.Millisecond:         "350 ms",
		4600 * time.Millisecond:        "4.6 s",
		20*time.Minute + 3*time.Second: "20 min 3 s",
		8*time.Hour + 24*time.Minute:   "8 h 24 min",
		7*24*time.Hour + 19*time.Hour:  "7 days 19 h",
		-time.Second:                   "",
	} {
		if got := HumanDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
