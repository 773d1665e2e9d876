package views

import (
	"strconv"
	"strings"
)

// Staleness reasons as the views name them (catalog.StaleReason values).
const (
	ReasonFresh     = "FRESH"
	ReasonNever     = "NEVER_MATERIALIZED"
	ReasonTainted   = "TAINTED"
	ReasonCode      = "CODE_CHANGED"
	ReasonUpstream  = "UPSTREAM_CHANGED"
	ReasonFreshness = "FRESHNESS"
	// SegStale is the overview's "materialized but stale" segment.
	SegStale = "stale"
)

// ReasonOrder is the legend order of the staleness view.
var ReasonOrder = []string{ReasonFresh, ReasonNever, ReasonTainted, ReasonCode, ReasonUpstream, ReasonFreshness}

// StalePanel is the asset page's staleness summary.
type StalePanel struct {
	Counts               Bar // one segment per reason, FRESH first (healthReasonBar)
	Stale                int64
	Failed, Missing      int64 // together: never materialized
	InProgress           int64
	BackfillStale        string
	BackfillMissingStale string
	Watermark            string
}

// StalenessView is one partition's reason and evidence.
type StalenessView struct {
	Reason, Evidence, Since string
}

// PartLink is a partition with its status, linking to its page.
type PartLink struct {
	Key, Href, Status string
}

// DepPartitions lists the partitions of one related asset.
type DepPartitions struct {
	Asset, AssetHref, Mapping string
	Summary                   string
	Parts                     []PartLink
	More                      int64
	RangeHref                 string
}

// TaintRow is one taint in a partition's taint history.
type TaintRow struct {
	Instance, Reason, Actor, At, Cleared string
}

// StatusRow is one asset on the status board.
type StatusRow struct {
	Key, Group, Href, BadgeHref string
	Partitions, Fresh, Stale    int64
	Failed, InProgress, Missing int64
	FreshPct                    string
	ByReason                    []Seg // stale reasons only
	LatestFresh                 string
	Lag, Policy                 string
	OverPolicy                  bool
	Ended                       bool // the latest fresh partition is the last of an ended scheme
	Badge                       string
	Spark                       []float64 // fresh share per day, oldest first; -1: no partitions that day
}

// StatusGroup is a workspace group on the status board.
type StatusGroup struct {
	Name   string
	Assets []StatusRow
}

// StatusBoard is the stakeholders' read-only page.
type StatusBoard struct {
	Groups    []StatusGroup
	Generated string
	// Refresh is the seconds between reloads of the board (0: never), and
	// Self the board's own address, which a reload fetches.
	Refresh int
	Self    string
}

// reasonLook is how a staleness reason reads: its human label, its CSS
// class (app.css: any bar may draw one) and its non-colour cue.
type reasonLook struct{ label, class, letter string }

var reasonLooks = map[string]reasonLook{
	ReasonFresh:     {"Fresh", "z-ok", "✓"},
	ReasonNever:     {"Never materialized", "s-x", "·"},
	ReasonTainted:   {"Tainted", "z-tnt", "T"},
	ReasonCode:      {"Code changed", "z-code", "C"},
	ReasonUpstream:  {"Upstream changed", "z-up", "U"},
	ReasonFreshness: {"Late (freshness)", "z-late", "L"},
	SegStale:        {"Stale", "z-stale", "S"},
}

// ReasonLabel is the human label of a staleness reason.
func ReasonLabel(r string) string {
	if l, ok := reasonLooks[r]; ok {
		return l.label
	}
	return StatusLabel(r)
}

// ReasonClass is the CSS class of a reason (app.css: any bar may draw one).
func ReasonClass(r string) string {
	if l, ok := reasonLooks[r]; ok {
		return l.class
	}
	return StatusClass(r)
}

// ReasonLetter is the non-colour cue of a reason.
func ReasonLetter(r string) string {
	if l, ok := reasonLooks[r]; ok {
		return l.letter
	}
	return StatusLetter(r)
}

func isReason(s string) bool {
	_, ok := reasonLooks[s]
	return ok
}

// sparkPoints lays a sparkline out as an SVG polyline (width w, height h).
func sparkPoints(vals []float64, w, h float64) string {
	type pt struct{ x, y float64 }
	var pts []pt
	step := w / float64(max(len(vals)-1, 1))
	for i, v := range vals {
		if v >= 0 {
			pts = append(pts, pt{float64(i) * step, h - 1 - v*(h-2)})
		}
	}
	var b strings.Builder
	for i, p := range pts {
		// A point between two of the same height lies on their line: the
		// board draws 30 of these per asset, most of them flat.
		if i > 0 && i < len(pts)-1 && pts[i-1].y == p.y && pts[i+1].y == p.y {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shortFloat(p.x))
		b.WriteByte(',')
		b.WriteString(shortFloat(p.y))
	}
	return b.String()
}

// shortFloat is f with one decimal, without a trailing ".0".
func shortFloat(f float64) string {
	return strings.TrimSuffix(ftoa(f), ".0")
}

// sparkLabel says what a sparkline of daily fresh shares shows, in words
// short enough for a board of hundreds of assets: the first and last day,
// the lowest and the average (days without partitions, -1, left out).
func sparkLabel(vals []float64) string {
	pct := SharePct // as the fresh cell: rounded down
	var known []float64
	for _, v := range vals {
		if v >= 0 {
			known = append(known, v)
		}
	}
	head := "Fresh share per day, last " + strconv.Itoa(len(vals)) + " days: "
	if len(known) == 0 {
		return head + "no partitions"
	}
	lo, sum := known[0], 0.0
	for _, v := range known {
		lo = min(lo, v)
		sum += v
	}
	return head + "from " + pct(known[0]) + " to " + pct(known[len(known)-1]) + ", lowest " + pct(lo) + ", average " + pct(sum/float64(len(known)))
}

// refreshEvery words a refresh period of n seconds: "30 s", "2 min".
func refreshEvery(n int) string {
	if n%60 == 0 {
		return strconv.Itoa(n/60) + " min"
	}
	return strconv.Itoa(n) + " s"
}

// HealthLabel names a partition's health (catalog.Health) as the health
// bars' legend does: "Materialized, fresh", "Materialized, stale",
// "Failed", "In progress", "Missing".
func HealthLabel(h string) string {
	switch h {
	case "fresh":
		return "Materialized, fresh"
	case SegStale:
		return "Materialized, stale"
	}
	return StatusLabel(h)
}

// HealthClass is the CSS class of a health, the colour of its bar segment.
func HealthClass(h string) string {
	if h == "fresh" {
		return StatusClass("materialized")
	}
	return StatusClass(h)
}

// HealthLetter is the non-colour cue of a health.
func HealthLetter(h string) string {
	if h == "fresh" {
		return StatusLetter("materialized")
	}
	return StatusLetter(h)
}
