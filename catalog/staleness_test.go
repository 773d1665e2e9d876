package catalog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestClassifyPrecedence(t *testing.T) {
	base := PartitionFacts{Materialized: true, MatAt: ms("2025-01-02T00:00:00Z"), CodeVersion: "v2", StaleFrom: NeverStale}
	now := ms("2025-01-03T00:00:00Z")
	cases := []struct {
		name string
		mod  func(f *PartitionFacts)
		want StaleReason
	}{
		{"fresh", func(f *PartitionFacts) {}, Fresh},
		{"never beats everything", func(f *PartitionFacts) {
			f.Materialized = false
			f.TaintedAt, f.CodeVersion, f.Upstream.MatAt, f.StaleFrom = 1, "v1", now, 0
		}, NeverMaterialized},
		{"tainted beats code, upstream, freshness", func(f *PartitionFacts) {
			f.TaintedAt, f.CodeVersion, f.Upstream.MatAt, f.StaleFrom = 1, "v1", now, 0
		}, Tainted},
		{"code beats upstream and freshness", func(f *PartitionFacts) { f.CodeVersion, f.Upstream.MatAt, f.StaleFrom = "v1", now, 0 }, CodeChanged},
		{"upstream beats freshness", func(f *PartitionFacts) { f.Upstream.MatAt, f.StaleFrom = f.MatAt+1, 0 }, UpstreamChanged},
		{"upstream at the same instant is not newer", func(f *PartitionFacts) { f.Upstream.MatAt = f.MatAt }, Fresh},
		{"freshness", func(f *PartitionFacts) { f.StaleFrom = now }, FreshnessLate},
		{"freshness one ms later", func(f *PartitionFacts) { f.StaleFrom = now + 1 }, Fresh},
	}
	for _, tc := range cases {
		f := base
		tc.mod(&f)
		if got := Classify(&f, "v2", now); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestExplainEvidence(t *testing.T) {
	now := time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)
	f := PartitionFacts{Materialized: true, MatAt: ms("2025-01-02T00:00:00Z"), CodeVersion: "v1", StaleFrom: NeverStale}
	s := Explain(f, "v2", nil, now)
	if s.Reason != CodeChanged || s.CodeVersion != "v1" || s.CurrentCodeVersion != "v2" || !strings.Contains(s.Evidence, "v1") || !strings.Contains(s.Evidence, "v2") {
		t.Fatalf("code changed: %+v", s)
	}
	f.CodeVersion = "v2"
	f.Upstream = UpstreamFact{Asset: "raw.events", Key: "2025-01-01-05:00", MatAt: ms("2025-01-02T01:00:00Z")}
	s = Explain(f, "v2", nil, now)
	if s.Reason != UpstreamChanged || s.UpstreamAsset != "raw.events" || s.UpstreamPartition != "2025-01-01-05:00" ||
		!strings.Contains(s.Evidence, "raw.events partition 2025-01-01-05:00 was materialized at 2025-01-02 01:00:00 UTC") {
		t.Fatalf("upstream changed: %+v", s)
	}
	f.TaintedAt, f.TaintReason = ms("2025-01-02T12:00:00Z"), "bad rows"
	if s = Explain(f, "v2", nil, now); s.Reason != Tainted || !strings.Contains(s.Evidence, "bad rows") || s.Since != f.TaintedAt {
		t.Fatalf("tainted: %+v", s)
	}
	if s = Explain(PartitionFacts{LastAttempt: "failed"}, "v2", nil, now); s.Reason != NeverMaterialized || !strings.Contains(s.Evidence, "failed") {
		t.Fatalf("never: %+v", s)
	}
}

// Freshness at the boundary: max_lag on a daily window and on a partition
// without a window; "by HH:MM" for yesterday's daily partition.
func TestFreshnessBoundary(t *testing.T) {
	fr := &Freshness{MaxLag: 3 * time.Hour}
	end := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC) // window 2025-01-01
	// Materialized after the window ended: complete, never stale.
	if got := fr.StaleFrom(end, true, end.Add(time.Minute).UnixMilli()); got != NeverStale {
		t.Fatalf("complete window: stale from %d", got)
	}
	// Materialized exactly 3h before the end: lag 3h is allowed.
	if got := fr.StaleFrom(end, true, end.Add(-3*time.Hour).UnixMilli()); got != NeverStale {
		t.Fatalf("lag exactly max_lag must be fresh, stale from %s", time.UnixMilli(got).UTC())
	}
	// 3h + 1ms before the end: stale once now − matAt > 3h.
	mat := end.Add(-3*time.Hour - time.Millisecond).UnixMilli()
	from := fr.StaleFrom(end, true, mat)
	if from != mat+3*3600*1000+1 {
		t.Fatalf("stale from %d, want %d", from, mat+3*3600*1000+1)
	}
	f := PartitionFacts{Materialized: true, MatAt: mat, StaleFrom: from}
	if Classify(&f, "", from-1) != Fresh || Classify(&f, "", from) != FreshnessLate {
		t.Fatal("boundary of max_lag on a window")
	}
	// No window (static): lag = now − matAt.
	mat = ms("2025-01-01T00:00:00Z")
	f = PartitionFacts{Materialized: true, MatAt: mat, StaleFrom: fr.StaleFrom(time.Time{}, false, mat)}
	if Classify(&f, "", mat+3*3600*1000) != Fresh || Classify(&f, "", mat+3*3600*1000+1) != FreshnessLate {
		t.Fatal("boundary of max_lag without a window")
	}

	berlin, _ := time.LoadLocation("Europe/Berlin")
	dl := &Freshness{DeadlineHHMM: "09:00", Location: berlin}
	dayEnd := time.Date(2025, 1, 16, 0, 0, 0, 0, berlin) // the 15th's window
	deadline := time.Date(2025, 1, 16, 9, 0, 0, 0, berlin)
	if got := dl.Deadline(dayEnd); !got.Equal(deadline) {
		t.Fatalf("deadline %s, want %s", got, deadline)
	}
	partial := dayEnd.Add(-time.Hour).UnixMilli() // materialized before the day ended
	f = PartitionFacts{Materialized: true, MatAt: partial, StaleFrom: dl.StaleFrom(dayEnd, true, partial)}
	if Classify(&f, "", deadline.UnixMilli()-1) != Fresh || Classify(&f, "", deadline.UnixMilli()) != FreshnessLate {
		t.Fatal("boundary of the 09:00 deadline")
	}
	if got := dl.StaleFrom(dayEnd, true, dayEnd.UnixMilli()); got != NeverStale {
		t.Fatal("a window materialized once it ended meets the deadline")
	}
	// Hourly window ending at 14:00: the next 09:00 is the following day.
	h := time.Date(2025, 1, 16, 14, 0, 0, 0, berlin)
	if got := dl.Deadline(h); !got.Equal(time.Date(2025, 1, 17, 9, 0, 0, 0, berlin)) {
		t.Fatalf("hourly deadline %s", got)
	}
}

// NewIndexMapper agrees with DownstreamOf for identity, hourly→daily,
// daily→monthly (both directions), multi and all mappings.
func TestIndexMapperMatchesDownstreamOf(t *testing.T) {
	ws, err := ParseWorkspace("t.yaml", []byte(withDemo(`assets:
  h:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-03-01-00:00"}}
  d:
    partitions: {daily: {start: 2025-01-01, end: 2025-03-01, timezone: Europe/Berlin}}
    deps: [h]
  d2:
    partitions: {daily: {start: 2024-12-30, end: 2025-03-01, timezone: Europe/Berlin}}
    deps: [{asset: d, mapping: identity}]
  m:
    partitions: {monthly: {start: 2025-01-01, end: 2025-03-01}}
    deps: [d]
  dm:
    partitions: {daily: {start: 2025-01-01, end: 2025-03-01}}
    deps: [m]
  x:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01, end: 2025-03-01}}
        region: {static: [eu, us]}
    deps: [d]
  s:
    partitions: {static: [a, b]}
    deps: [{asset: d, mapping: all}]
`)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, down := range ws.Assets {
		for _, dep := range down.Deps {
			up := ws.Asset(dep.Asset)
			dsp, usp := down.Scheme.Space(now, nil), up.Scheme.Space(now, nil)
			m := NewIndexMapper(dep, down.Scheme, dsp, up.Scheme, usp)
			for u := int64(0); u < usp.Len(); u += 7 {
				want, err := DownstreamOf(dep, down.Scheme, dsp, up.Scheme, usp, usp.Key(u))
				if err != nil {
					t.Fatal(err)
				}
				var got []IndexRange
				if m.All {
					got = []IndexRange{{0, dsp.Len() - 1}}
				} else {
					got = m.Map(u)
				}
				if CountRanges(got) != CountRanges(want) || (len(got) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
					t.Fatalf("%s <- %s: upstream %s maps to %v, want %v", down.Key, up.Key, usp.Key(u), got, want)
				}
			}
		}
	}
}

// withDemo gives every asset of a test workspace a demo executor.
func withDemo(y string) string {
	return strings.ReplaceAll(y, "\n    partitions:", "\n    executor: {demo: {duration: 1s}}\n    partitions:")
}

// The API shows staleness times as RFC 3339, not Unix milliseconds.
func TestStalenessJSONTimes(t *testing.T) {
	at := time.Date(2025, 2, 1, 12, 0, 0, 0, time.UTC)
	b, err := json.Marshal(Staleness{Reason: UpstreamChanged, Evidence: "x", Since: at.UnixMilli(), UpstreamAt: at.UnixMilli(), UpstreamAsset: "up"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"reason":"UPSTREAM_CHANGED","evidence":"x","upstream_asset":"up","since":"2025-02-01T12:00:00.000Z","upstream_materialized_at":"2025-02-01T12:00:00.000Z"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(Staleness{Reason: Fresh})
	if strings.Contains(string(b), "since") {
		t.Errorf("a fresh partition has a since: %s", b)
	}
}

// TestFormatDuration: whole tens of seconds keep their zero (10s, not 1),
// and zero minutes or seconds after a larger unit are left out.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Second: "10s", 30 * time.Second: "30s", time.Second: "1s", 0: "0s", time.Minute: "1m", 90 * time.Second: "1m30s",
		20 * time.Minute: "20m", time.Hour: "1h", 26 * time.Hour: "26h", 3*time.Hour + 30*time.Minute: "3h30m", 48 * time.Hour: "2d",
		time.Hour + 10*time.Second: "1h0m10s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
