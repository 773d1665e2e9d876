package catalog

import (
	"reflect"
	"testing"
)

func rangesKeys(sp Space, rs []IndexRange) []string {
	var out []string
	for _, r := range rs {
		out = append(out, sp.Keys(r.Lo, r.Len())...)
	}
	return out
}

func TestMappingIdentity(t *testing.T) {
	now := at(t, "2025-03-01", "UTC")
	a := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	b := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-10"})
	asp, bsp := a.Space(now, nil), b.Space(now, nil)
	dep := Dep{Asset: "a"}
	if m := ResolveMapping(dep.Mapping, b, a); m != MappingIdentity {
		t.Fatalf("auto = %s", m)
	}
	rs, err := UpstreamOf(dep, b, bsp, a, asp, "2025-01-10")
	wantRanges(t, "UpstreamOf", rs, err, []IndexRange{{9, 9}})
	rs, err = DownstreamOf(dep, b, bsp, a, asp, "2025-01-05")
	if err != nil || rs != nil {
		t.Errorf("DownstreamOf before b's start = %v, %v", rs, err)
	}
	_, err = UpstreamOf(dep, b, bsp, a, asp, "2025-01-01")
	wantKeyErr(t, err, "before the first partition")
	// Static identity.
	s1, s2 := mustStatic(t, "a", "b", "c"), mustStatic(t, "c", "a")
	rs, _ = UpstreamOf(dep, s2, s2.Space(now, nil), s1, s1.Space(now, nil), "c")
	wantRanges(t, "static identity", rs, nil, []IndexRange{{2, 2}})
}

func TestMappingHourlyToDaily(t *testing.T) {
	now := at(t, "2026-01-01", "UTC")
	h := mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"})
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01", Timezone: "Europe/Berlin"})
	hsp, dsp := h.Space(now, nil), d.Space(now, nil)
	dep := Dep{Asset: "raw.events"}
	if m := ResolveMapping("", d, h); m != MappingTimeWindow {
		t.Fatalf("auto = %s", m)
	}
	for _, tc := range []struct {
		day         string
		hours       int64
		first, last string
	}{
		{"2025-01-02", 24, "2025-01-01-23:00", "2025-01-02-22:00"},
		{"2025-03-30", 23, "2025-03-29-23:00", "2025-03-30-21:00"},
		{"2025-10-26", 25, "2025-10-25-22:00", "2025-10-26-22:00"},
	} {
		rs, err := UpstreamOf(dep, d, dsp, h, hsp, tc.day)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %v, %v", tc.day, rs, err)
		}
		if rs[0].Len() != tc.hours || hsp.Key(rs[0].Lo) != tc.first || hsp.Key(rs[0].Hi) != tc.last {
			t.Errorf("%s: %d hours %s..%s", tc.day, rs[0].Len(), hsp.Key(rs[0].Lo), hsp.Key(rs[0].Hi))
		}
	}
	// The first Berlin day starts at 2024-12-31 23:00 UTC: clamped to the hourly start.
	rs, _ := UpstreamOf(dep, d, dsp, h, hsp, "2025-01-01")
	if len(rs) != 1 || rs[0].Lo != 0 || rs[0].Len() != 23 {
		t.Errorf("clamped first day = %v", rs)
	}
	rs, err := DownstreamOf(dep, d, dsp, h, hsp, "2025-03-29-23:00")
	if err != nil || len(rs) != 1 || dsp.Key(rs[0].Lo) != "2025-03-30" || rs[0].Len() != 1 {
		t.Errorf("DownstreamOf hour = %v, %v", rs, err)
	}
	// Outside the other space: empty.
	small := d.Space(at(t, "2025-01-05", "Europe/Berlin"), nil)
	rs, err = DownstreamOf(dep, d, small, h, hsp, "2025-06-01-00:00")
	if err != nil || rs != nil {
		t.Errorf("outside = %v, %v", rs, err)
	}
}

func TestMappingDailyMonthlyWeekly(t *testing.T) {
	now := at(t, "2026-01-01", "UTC")
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	m := mustTime(t, TimeParams{Unit: KindMonthly, Start: "2025-01-01"})
	w := mustTime(t, TimeParams{Unit: KindWeekly, Start: "2025-01-06"})
	dsp, msp, wsp := d.Space(now, nil), m.Space(now, nil), w.Space(now, nil)
	dep := Dep{Asset: "x"}
	// A month reads its days.
	rs, err := UpstreamOf(dep, m, msp, d, dsp, "2025-02-01")
	if got := rangesKeys(dsp, rs); err != nil || len(got) != 28 || got[0] != "2025-02-01" || got[27] != "2025-02-28" {
		t.Errorf("month days = %v, %v", got, err)
	}
	rs, _ = DownstreamOf(dep, m, msp, d, dsp, "2025-02-14")
	if !reflect.DeepEqual(rangesKeys(msp, rs), []string{"2025-02-01"}) {
		t.Errorf("day's month = %v", rs)
	}
	// A week reads its days.
	rs, _ = UpstreamOf(dep, w, wsp, d, dsp, "2025-01-13")
	if got := rangesKeys(dsp, rs); len(got) != 7 || got[0] != "2025-01-13" || got[6] != "2025-01-19" {
		t.Errorf("week days = %v", got)
	}
	// Finer from coarser: a day reads its month.
	rs, _ = UpstreamOf(dep, d, dsp, m, msp, "2025-03-31")
	if !reflect.DeepEqual(rangesKeys(msp, rs), []string{"2025-03-01"}) {
		t.Errorf("day reads month = %v", rangesKeys(msp, rs))
	}
	rs, _ = DownstreamOf(dep, d, dsp, m, msp, "2025-03-01")
	if got := rangesKeys(dsp, rs); len(got) != 31 {
		t.Errorf("month's readers = %d days", len(got))
	}
	// A week spanning two months reads both months.
	rs, _ = UpstreamOf(dep, w, wsp, m, msp, "2025-01-27")
	if got := rangesKeys(msp, rs); !reflect.DeepEqual(got, []string{"2025-01-01", "2025-02-01"}) {
		t.Errorf("week spanning months = %v", got)
	}
}

func TestMappingMulti(t *testing.T) {
	now := at(t, "2025-01-11", "UTC")
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	mr := dailyRegion(t)
	dsp, msp := d.Space(now, nil), mr.Space(now, nil)
	dep := Dep{Asset: "analytics.daily_events"}
	if m := ResolveMapping("", mr, d); m != MappingTimeWindow {
		t.Fatalf("auto = %s", m)
	}
	rs, err := UpstreamOf(dep, mr, msp, d, dsp, "2025-01-02|us")
	wantRanges(t, "UpstreamOf", rs, err, []IndexRange{{1, 1}})
	rs, err = DownstreamOf(dep, mr, msp, d, dsp, "2025-01-02")
	wantRanges(t, "DownstreamOf", rs, err, []IndexRange{{3, 5}})
	// Multi hourly×region -> multi daily×region: regions matched by name.
	h := mustTime(t, TimeParams{Unit: KindHourly, Start: "2025-01-01-00:00"})
	hr := mustMulti(t, Dimension{"hour", h}, Dimension{"region", mustStatic(t, "eu", "us", "apac")})
	hsp := hr.Space(now, nil)
	rs, err = UpstreamOf(dep, mr, msp, hr, hsp, "2025-01-02|us")
	keys := rangesKeys(hsp, rs)
	if err != nil || len(keys) != 24 || keys[0] != "2025-01-02-00:00|us" || keys[23] != "2025-01-02-23:00|us" {
		t.Errorf("hourly×region -> daily×region: %v, %v", keys, err)
	}
	rs, _ = DownstreamOf(dep, mr, msp, hr, hsp, "2025-01-02-05:00|apac")
	if got := rangesKeys(msp, rs); !reflect.DeepEqual(got, []string{"2025-01-02|apac"}) {
		t.Errorf("DownstreamOf hour|apac = %v", got)
	}
	// Daily asset reading a daily×region asset: every region of that day.
	rs, _ = UpstreamOf(dep, d, dsp, mr, msp, "2025-01-03")
	wantRanges(t, "daily reads all regions", rs, nil, []IndexRange{{6, 8}})
	// Monthly reading hourly×region: all hours of all regions in the month, one range.
	mo := mustTime(t, TimeParams{Unit: KindMonthly, Start: "2025-01-01"})
	mosp := mo.Space(at(t, "2025-03-01", "UTC"), nil)
	hsp2 := hr.Space(at(t, "2025-03-01", "UTC"), nil)
	rs, _ = UpstreamOf(dep, mo, mosp, hr, hsp2, "2025-02-01")
	if len(rs) != 1 || rs[0].Len() != 28*24*3 {
		t.Errorf("month of hourly×region = %v", rs)
	}
}

func TestMappingAll(t *testing.T) {
	now := at(t, "2025-01-11", "UTC")
	s := mustStatic(t, "acme", "globex", "initech")
	dy := mustDynamic(t, "partners")
	d := mustTime(t, TimeParams{Unit: KindDaily, Start: "2025-01-01"})
	ssp, dsp := s.Space(now, nil), d.Space(now, nil)
	dysp := dy.Space(now, DynamicKeysMap{"partners": {"p1", "p2"}})
	dep := Dep{Asset: "crm"}
	if m := ResolveMapping("", d, s); m != MappingAll {
		t.Fatalf("auto = %s", m)
	}
	rs, err := UpstreamOf(dep, d, dsp, s, ssp, "2025-01-05")
	wantRanges(t, "all", rs, err, []IndexRange{{0, 2}})
	rs, _ = DownstreamOf(dep, d, dsp, s, ssp, "globex")
	wantRanges(t, "downstream all", rs, nil, []IndexRange{{0, 9}})
	rs, _ = UpstreamOf(dep, d, dsp, dy, dysp, "2025-01-05")
	wantRanges(t, "dynamic all", rs, nil, []IndexRange{{0, 1}})
	rs, _ = UpstreamOf(dep, d, dsp, dy, dy.Space(now, nil), "2025-01-05")
	if rs != nil {
		t.Errorf("empty upstream = %v", rs)
	}
	// Explicit mapping overrides auto.
	rs, _ = UpstreamOf(Dep{Asset: "d", Mapping: MappingAll}, d, dsp, d, dsp, "2025-01-05")
	wantRanges(t, "explicit all", rs, nil, []IndexRange{{0, 9}})
	if err := CheckMapping(MappingTimeWindow, d, s); err == nil {
		t.Error("time_window to static accepted")
	}
	if err := CheckMapping(MappingIdentity, d, s); err == nil {
		t.Error("identity daily->static accepted")
	}
}

func TestRectRanges(t *testing.T) {
	lens := []int64{4, 3, 2}
	strides := []int64{6, 2, 1}
	rs, _ := rectRanges(lens, strides, []IndexRange{{1, 2}, {0, 2}, {0, 1}})
	wantRanges(t, "contiguous", rs, nil, []IndexRange{{6, 17}})
	rs, _ = rectRanges(lens, strides, []IndexRange{{1, 2}, {1, 1}, {0, 1}})
	wantRanges(t, "fixed middle", rs, nil, []IndexRange{{8, 9}, {14, 15}})
	rs, _ = rectRanges(lens, strides, []IndexRange{{0, 3}, {0, 2}, {0, 1}})
	wantRanges(t, "full", rs, nil, []IndexRange{{0, 23}})
}

// wantRanges fails the test, naming what, unless err is nil and rs is want.
func wantRanges(t testing.TB, what string, rs []IndexRange, err error, want []IndexRange) {
	t.Helper()
	if err != nil || !reflect.DeepEqual(rs, want) {
		t.Errorf("%s = %v, %v; want %v", what, rs, err, want)
	}
}
