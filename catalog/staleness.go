package catalog

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// StaleReason says why a partition is stale. Staleness is computed when it
// is read, never stored: a partition gets the first applicable reason in the
// order of StaleReasons.
type StaleReason string

// Staleness reasons, and Fresh for a partition with none of them.
const (
	Fresh             StaleReason = "FRESH"
	NeverMaterialized StaleReason = "NEVER_MATERIALIZED"
	Tainted           StaleReason = "TAINTED"
	CodeChanged       StaleReason = "CODE_CHANGED"
	UpstreamChanged   StaleReason = "UPSTREAM_CHANGED"
	FreshnessLate     StaleReason = "FRESHNESS"
)

// StaleReasons lists the reasons in precedence order.
var StaleReasons = []StaleReason{NeverMaterialized, Tainted, CodeChanged, UpstreamChanged, FreshnessLate}

// NeverStale is the StaleFrom of a partition the freshness policy never
// makes stale.
const NeverStale int64 = math.MaxInt64

// UpstreamFact is the newest materialization among the upstream partitions a
// partition reads (through its dependencies' partition mappings).
type UpstreamFact struct {
	Asset, Key string
	MatAt      int64 // Unix ms; 0 when no mapped upstream partition is materialized
}

// PartitionFacts is what the staleness rules know about one partition.
type PartitionFacts struct {
	Materialized bool
	MatAt        int64  // Unix ms of the last successful materialization
	CodeVersion  string // code version of that materialization
	TaintedAt    int64  // Unix ms; 0 when not tainted
	TaintReason  string
	LastAttempt  string // status of the last attempt ("failed", "in_progress"...), "" if never attempted
	Upstream     UpstreamFact
	// StaleFrom is the instant (Unix ms) from which the freshness policy
	// makes the partition stale (see Freshness.StaleFrom); NeverStale when
	// it never does.
	StaleFrom int64
}

// Classify returns the first applicable staleness reason (Fresh when none),
// without evidence: the fast path for counting millions of partitions.
func Classify(f *PartitionFacts, codeVersion string, now int64) StaleReason {
	switch {
	case !f.Materialized:
		return NeverMaterialized
	case f.TaintedAt != 0:
		return Tainted
	case f.CodeVersion != codeVersion:
		return CodeChanged
	case f.Upstream.MatAt > f.MatAt:
		return UpstreamChanged
	case now >= f.StaleFrom:
		return FreshnessLate
	}
	return Fresh
}

// Staleness is a partition's reason with its evidence.
type Staleness struct {
	Reason   StaleReason `json:"reason"`
	Evidence string      `json:"evidence"`
	// Since is when the partition became stale (Unix ms), 0 if unknown or fresh.
	Since int64 `json:"since,omitempty"`
	// Details of the evidence, set for the reasons they concern.
	CodeVersion        string `json:"code_version,omitempty"`
	CurrentCodeVersion string `json:"current_code_version,omitempty"`
	UpstreamAsset      string `json:"upstream_asset,omitempty"`
	UpstreamPartition  string `json:"upstream_partition,omitempty"`
	UpstreamAt         int64  `json:"upstream_materialized_at,omitempty"`
	TaintReason        string `json:"taint_reason,omitempty"`
	// The times and policy the evidence names, to write it in another
	// zone (EvidenceIn); set by Explain.
	times struct {
		set                        bool
		matAt, upstreamAt, staleAt int64
		policy                     string
	}
}

// EvidenceIn is the evidence with its times written in loc, each with its
// zone ("2026-11-28 17:40:05 CET"); Evidence is it in UTC.
func (s Staleness) EvidenceIn(loc *time.Location) string {
	if !s.times.set {
		return s.Evidence
	}
	at := func(ms int64) string { return time.UnixMilli(ms).In(loc).Format("2006-01-02 15:04:05 MST") }
	tm := s.times
	switch s.Reason {
	case Tainted:
		return fmt.Sprintf("tainted at %s: %s", at(s.Since), s.TaintReason)
	case UpstreamChanged:
		return fmt.Sprintf("upstream %s partition %s was materialized at %s, after this partition (%s)",
			s.UpstreamAsset, s.UpstreamPartition, at(tm.upstreamAt), at(tm.matAt))
	case FreshnessLate:
		return fmt.Sprintf("materialized at %s; %s; stale since %s", at(tm.matAt), tm.policy, at(tm.staleAt))
	case Fresh:
		return "materialized at " + at(tm.matAt)
	}
	return s.Evidence
}

// APITimeLayout is how the API writes every time: RFC 3339 in UTC with
// exactly three fractional digits (2025-01-31T12:00:00.000Z), so that times
// have one width and compare as strings in the order they happened.
const APITimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the times as RFC 3339 strings, like every time the API
// answers.
func (s Staleness) MarshalJSON() ([]byte, error) {
	type plain Staleness
	out := struct {
		plain
		Since      *string `json:"since,omitempty"`
		UpstreamAt *string `json:"upstream_materialized_at,omitempty"`
	}{plain: plain(s)}
	rfc := func(ms int64) *string {
		if ms == 0 {
			return nil
		}
		t := time.UnixMilli(ms).UTC().Format(APITimeLayout)
		return &t
	}
	out.Since, out.UpstreamAt = rfc(s.Since), rfc(s.UpstreamAt)
	return json.Marshal(out)
}

// Explain returns the reason and its evidence. fr is the asset's freshness
// policy (nil: none), used to word the FRESHNESS evidence.
func Explain(f PartitionFacts, codeVersion string, fr *Freshness, now time.Time) Staleness {
	r := Classify(&f, codeVersion, now.UnixMilli())
	s := Staleness{Reason: r}
	switch r {
	case NeverMaterialized:
		switch f.LastAttempt {
		case "":
			s.Evidence = "never materialized: no attempt yet"
		case "failed":
			s.Evidence = "never materialized: the last attempt failed"
		case "in_progress":
			s.Evidence = "never materialized: an attempt is in progress"
		default:
			s.Evidence = "never materialized (last attempt: " + f.LastAttempt + ")"
		}
	case Tainted:
		s.Since = f.TaintedAt
		s.TaintReason = f.TaintReason
	case CodeChanged:
		s.CodeVersion, s.CurrentCodeVersion = f.CodeVersion, codeVersion
		s.Evidence = fmt.Sprintf("materialized with code version %s; the asset is now at %s", quoteVersion(f.CodeVersion), quoteVersion(codeVersion))
	case UpstreamChanged:
		s.Since = f.Upstream.MatAt
		s.UpstreamAsset, s.UpstreamPartition, s.UpstreamAt = f.Upstream.Asset, f.Upstream.Key, f.Upstream.MatAt
	case FreshnessLate:
		s.Since = f.StaleFrom
	}
	switch r {
	case Tainted, UpstreamChanged, FreshnessLate, Fresh:
		s.times.set, s.times.matAt, s.times.upstreamAt, s.times.staleAt = true, f.MatAt, f.Upstream.MatAt, f.StaleFrom
		if r == FreshnessLate {
			s.times.policy = fr.Describe()
		}
		s.Evidence = s.EvidenceIn(time.UTC)
	}
	return s
}

func quoteVersion(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// Describe words the policy for evidence and pages.
func (f *Freshness) Describe() string {
	if f == nil {
		return "no freshness policy"
	}
	var parts []string
	if f.MaxLag > 0 {
		parts = append(parts, "the policy allows at most "+FormatDuration(f.MaxLag)+" of lag")
	}
	if f.DeadlineHHMM != "" {
		parts = append(parts, "each window must be fully materialized by "+f.DeadlineHHMM+" "+f.loc().String()+" after it ends")
	}
	return strings.Join(parts, " and ")
}

// DeadlineLabel words the by-deadline part of the policy, "by 09:00
// Europe/Berlin" ("" without one).
func (f *Freshness) DeadlineLabel() string {
	if f == nil || f.DeadlineHHMM == "" {
		return ""
	}
	return "by " + f.DeadlineHHMM + " " + f.loc().String()
}

func (f *Freshness) loc() *time.Location {
	if f.Location == nil {
		return time.UTC
	}
	return f.Location
}

// StaleFrom applies the freshness rule to one materialized partition and
// returns the instant (Unix ms) from which it is FRESHNESS-stale, or
// NeverStale. windowEnd is the exclusive end of the partition's time window;
// hasWindow is false for partitions without one (static, dynamic).
//
// The rule (README, "Staleness"):
//
//   - max_lag L. A partition's lag is how much of its data the last
//     materialization may be missing: min(now, window end) − materialized at.
//     It is stale when the lag exceeds L (a lag of exactly L is fresh). A
//     window materialized after it ended is complete, so it stays fresh. A
//     partition without a time window has lag now − materialized at.
//   - by HH:MM (in the policy's timezone). A window's deadline is the first
//     HH:MM at or after the window's end (yesterday's daily partition: today
//     at HH:MM). From the deadline on, a partition whose last
//     materialization was taken before its window ended is stale. Partitions
//     without a time window are not concerned.
//
// Unmaterialized partitions are NEVER_MATERIALIZED, which comes first.
func (f *Freshness) StaleFrom(windowEnd time.Time, hasWindow bool, matAt int64) int64 {
	if f == nil {
		return NeverStale
	}
	from := NeverStale
	if f.MaxLag > 0 {
		lag := f.MaxLag.Milliseconds()
		if !hasWindow || windowEnd.UnixMilli()-matAt > lag {
			from = matAt + lag + 1
		}
	}
	if f.DeadlineHHMM != "" && hasWindow && matAt < windowEnd.UnixMilli() {
		if d := f.Deadline(windowEnd).UnixMilli(); d < from {
			from = d
		}
	}
	return from
}

// Deadline returns the first HH:MM (in the policy's timezone) at or after
// windowEnd.
func (f *Freshness) Deadline(windowEnd time.Time) time.Time {
	hh, mm := parseHHMM(f.DeadlineHHMM)
	t := windowEnd.In(f.loc())
	y, m, d := t.Date()
	dl := time.Date(y, m, d, hh, mm, 0, 0, f.loc())
	if dl.Before(windowEnd) {
		dl = time.Date(y, m, d+1, hh, mm, 0, 0, f.loc())
	}
	return dl
}

func parseHHMM(s string) (int, int) {
	h, m, _ := strings.Cut(s, ":")
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	return hh, mm
}

// WindowEnds returns a function giving the exclusive end of partition idx's
// time window in sp (the time dimension's window for multi schemes), and
// false for schemes without a time part.
func WindowEnds(s Scheme, sp Space) (func(idx int64) time.Time, bool) {
	ts, dim, ok := SchemeTimeDim(s)
	if !ok {
		return nil, false
	}
	if dim < 0 {
		return func(i int64) time.Time { return ts.WindowStart(i + 1) }, true
	}
	ms, ok := sp.(MultiSpace)
	if !ok {
		return nil, false
	}
	stride := ms.Strides()[dim]
	size := ms.DimSpaces()[dim].Len()
	if stride <= 0 {
		return nil, false
	}
	return func(i int64) time.Time { return ts.WindowStart((i/stride)%max(size, 1) + 1) }, true
}

// IndexMapper maps an upstream partition index to the downstream index
// ranges that read it, for one dependency. All reports that every
// downstream partition reads every upstream partition (MappingAll), in which
// case Map is not needed. Mappers of time schemes, which map a partition to
// at most one range, also have One: the range without a slice (ok false:
// none).
type IndexMapper struct {
	All bool
	Map func(upIdx int64) []IndexRange
	One func(upIdx int64) (r IndexRange, ok bool)
}

// oneRange makes a mapper of one range per upstream index, the range of
// rng clamped to the n downstream indexes.
func oneRange(n int64, rng func(u int64) (lo, hi int64)) IndexMapper {
	one := func(u int64) (IndexRange, bool) {
		lo, hi := rng(u)
		lo, hi = max(lo, 0), min(hi, n-1)
		return IndexRange{Lo: lo, Hi: hi}, lo <= hi
	}
	return IndexMapper{One: one, Map: func(u int64) []IndexRange {
		if r, ok := one(u); ok {
			return []IndexRange{r}
		}
		return nil
	}}
}

// NewIndexMapper builds the mapper of dep between the downstream asset
// (down, downSpace) and its upstream (up, upSpace). Same-shaped time schemes
// and plain time windows map with arithmetic; other shapes go through the
// keys (UpstreamOf/DownstreamOf semantics).
func NewIndexMapper(dep Dep, down Scheme, downSpace Space, up Scheme, upSpace Space) IndexMapper {
	kind := ResolveMapping(dep.Mapping, down, up)
	if kind == MappingAll {
		return IndexMapper{All: true}
	}
	n := downSpace.Len()
	dts, dOK := down.(TimeScheme)
	uts, uOK := up.(TimeScheme)
	if dOK && uOK && (kind == MappingTimeWindow || (kind == MappingIdentity && sameShape(down, up))) {
		if kind == MappingIdentity {
			off := dts.IndexAt(uts.WindowStart(0))
			return oneRange(n, func(u int64) (int64, int64) { return u + off, u + off })
		}
		if days, ok := dayMapper(down, up); ok {
			return oneRange(n, days)
		}
		return oneRange(n, func(u int64) (int64, int64) { return timeWindowMap(dts, uts, u) })
	}
	return IndexMapper{Map: func(u int64) []IndexRange {
		key := upSpace.Key(u)
		if key == "" {
			return nil
		}
		rs, err := mapKey(kind, up, upSpace, down, downSpace, key)
		if err != nil {
			return nil
		}
		return rs
	}}
}

// timeWindowMap returns the downstream windows (dts) overlapping upstream
// window u (uts): those of its first and last instants.
func timeWindowMap(dts, uts TimeScheme, u int64) (lo, hi int64) {
	return dts.IndexAt(uts.WindowStart(u)), dts.IndexAt(uts.WindowStart(u + 1).Add(-time.Nanosecond))
}

// FormatDuration words a duration compactly: 26h, 3h30m, 2d, 45s.
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") { // 1m0s -> 1m, never 10s -> 1
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
