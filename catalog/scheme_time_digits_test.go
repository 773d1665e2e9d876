package catalog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// WindowIndex reads keys of a digit layout without the time package; it
// must give what the time package's parser and formatter give, index or
// error, for every key: valid ones, neighbours of the bounds, impossible
// dates, keys not at a window's start, and random damage of valid ones.
func TestDigitLayoutAgreesWithTimeParse(t *testing.T) {
	t.Parallel()
	schemes := []TimeParams{
		{Unit: KindHourly, Start: "2024-02-27-00:00"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", End: "2024-03-02-05:00"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", KeyFormat: "%Y%m%dT%H"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", KeyFormat: "%Y/%m/%d %H:%M:%S"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", Timezone: "Asia/Kolkata"},
		{Unit: KindHourly, Start: "2025-04-01-00:00", End: "2025-10-01-00:00", Timezone: "Europe/Berlin"},
		{Unit: KindDaily, Start: "2024-02-27"},
		{Unit: KindDaily, Start: "2024-02-27", End: "2024-03-03", Timezone: "America/New_York"},
		{Unit: KindDaily, Start: "2024-02-27", KeyFormat: "%d/%m/%Y"},
		{Unit: KindWeekly, Start: "2024-02-26"},
		{Unit: KindMonthly, Start: "2023-11-01", KeyFormat: "%Y-%m"},
		{Unit: KindMonthly, Start: "2023-11-01"},
	}
	extra := []string{
		"2024-02-30-00:00", "2024-02-29-00:00", "2023-02-29-00:00", "2024-13-01-00:00", "2024-00-10-00:00", "2024-03-00-00:00",
		"2024-03-01-24:00", "2024-03-01-23:60", "2024-03-01-10:30", "2024-03-01-1:00", "2024-03-01-10:0", "2024-03-01 10:00",
		"2024-02-30", "2024-02-29", "2023-02-29", "2024-04-31", "2024-03-05", "2024-03-04", "2024-03", "2024-02", "2023-10",
		"2025-03-30-02:00", "2025-10-26-02:00", "2025-09-30-23:00", "2025-10-01-00:00", "2025-04-01-00:00", "2025-03-31-23:00",
		"20240301T10", "20240301T24", "2024/03/01 10:00:00", "2024/03/01 10:00:01", "01/03/2024", "31/02/2024",
		"", "x", "0000-01-01-00:00", "9999-12-31-23:00", "２０２４-03-01-10:00",
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, p := range schemes {
		ts := mustTime(t, p)
		s := ts.(*timeScheme)
		if s.digits == nil {
			t.Fatalf("%+v: no digit layout", p)
		}
		var keys []string
		for i := int64(-3); i < 24*40; i++ {
			keys = append(keys, s.key(i))
		}
		keys = append(keys, extra...)
		for range 3000 {
			k := []byte(keys[r.IntN(len(keys))])
			if len(k) == 0 {
				continue
			}
			switch r.IntN(3) {
			case 0:
				k[r.IntN(len(k))] = byte('0' + r.IntN(10))
			case 1:
				k[r.IntN(len(k))] = "-:/ T9x"[r.IntN(7)]
			default:
				k = k[:r.IntN(len(k))]
			}
			keys = append(keys, string(k))
		}
		fast := 0
		for _, k := range keys {
			got, gerr := s.WindowIndex(k)
			want, werr := s.parsedWindowIndex(k)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%+v: WindowIndex(%q) = %d, %v; the time package says %d, %v", p, k, got, gerr, want, werr)
			}
			if _, ok := s.digitIndex(k); ok {
				fast++
			}
		}
		if fast == 0 {
			t.Errorf("%+v: no key was read digit by digit", p)
		}
	}
	for _, f := range []string{"%Y-%m-%d-%H:%M%z", "%Y.%m.%d", "%Y-%m-%d-%H:%M-%H", "%m-%d"} {
		if l := compileDigitLayout(f, KindHourly); l != nil {
			t.Errorf("%s compiled to a digit layout", f)
		}
	}
}

// Keys written digit by digit into a digit layout's template are exactly
// what the time package's formatter writes, in every unit, format and time
// zone, and past the year 9999, where the
// formatter writes them itself.
func TestDigitKeysAgreeWithFormat(t *testing.T) {
	t.Parallel()
	for _, p := range []TimeParams{
		{Unit: KindHourly, Start: "2024-02-27-00:00"},
		{Unit: KindHourly, Start: "0001-01-01-00:00"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", KeyFormat: "%Y%m%dT%H"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", KeyFormat: "%Y/%m/%d %H:%M:%S"},
		{Unit: KindHourly, Start: "2024-02-27-00:00", Timezone: "Asia/Kolkata"},
		{Unit: KindHourly, Start: "2025-04-01-00:00", End: "2025-10-01-00:00", Timezone: "Europe/Berlin"},
		{Unit: KindHourly, Start: "2025-03-01-00:00", Timezone: "Asia/Kolkata", KeyFormat: "%Y-%m-%d %H:%M"},
		{Unit: KindDaily, Start: "2024-02-27"},
		{Unit: KindDaily, Start: "2024-02-27", Timezone: "America/New_York"},
		{Unit: KindDaily, Start: "2024-02-27", KeyFormat: "%d/%m/%Y"},
		{Unit: KindWeekly, Start: "2024-02-26"},
		{Unit: KindMonthly, Start: "2023-11-01", KeyFormat: "%Y-%m"},
		{Unit: KindMonthly, Start: "9990-11-01"},
	} {
		s := mustTime(t, p).(*timeScheme)
		if s.digits == nil {
			t.Fatalf("%+v: no digit layout", p)
		}
		for _, i := range append(span(-30, 24*400), 1e6, 1e7, 1e8, 3e9) {
			if got, want := s.key(i), s.formattedKey(i); got != want {
				t.Fatalf("%+v: key(%d) = %q, the time package writes %q", p, i, got, want)
			}
		}
	}
}

// span is lo, lo+1, …, hi-1.
func span(lo, hi int64) []int64 {
	out := make([]int64, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}
