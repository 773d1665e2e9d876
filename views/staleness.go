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
	Counts               Bar // one segment per reason, FRESH first
	Stale                int64
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
	FreshPct                    string
	ByReason                    []Seg // stale reasons only
	LatestFresh                 string
	Lag, Policy                 string
	OverPolicy                  bool
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
}

// ReasonLabel is the human label of a staleness reason.
func ReasonLabel(r string) string {
	switch r {
	case ReasonFresh:
		return "Fresh"
	case ReasonNever:
		return "Never materialized"
	case ReasonTainted:
		return "Tainted"
	case ReasonCode:
		return "Code changed"
	case ReasonUpstream:
		return "Upstream changed"
	case ReasonFreshness:
		return "Late (freshness)"
	case SegStale:
		return "Stale"
	}
	return StatusLabel(r)
}

// ReasonClass is the CSS class of a reason (app.css: any bar may draw one).
func ReasonClass(r string) string {
	switch r {
	case ReasonFresh:
		return "z-ok"
	case ReasonNever:
		return "s-x"
	case ReasonTainted:
		return "z-tnt"
	case ReasonCode:
		return "z-code"
	case ReasonUpstream:
		return "z-up"
	case ReasonFreshness:
		return "z-late"
	case SegStale:
		return "z-stale"
	}
	return StatusClass(r)
}

// ReasonLetter is the non-colour cue of a reason.
func ReasonLetter(r string) string {
	switch r {
	case ReasonFresh:
		return "✓"
	case ReasonNever:
		return "·"
	case ReasonTainted:
		return "T"
	case ReasonCode:
		return "C"
	case ReasonUpstream:
		return "U"
	case ReasonFreshness:
		return "L"
	case SegStale:
		return "S"
	}
	return StatusLetter(r)
}

func isReason(s string) bool {
	switch s {
	case ReasonFresh, ReasonNever, ReasonTainted, ReasonCode, ReasonUpstream, ReasonFreshness, SegStale:
		return true
	}
	return false
}

// sparkPoints lays a sparkline out as an SVG polyline (width w, height h).
func sparkPoints(vals []float64, w, h float64) string {
	if len(vals) == 0 {
		return ""
	}
	var b strings.Builder
	step := w / float64(max(len(vals)-1, 1))
	for i, v := range vals {
		if v < 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ftoa(float64(i) * step))
		b.WriteByte(',')
		b.WriteString(ftoa(h - 1 - v*(h-2)))
	}
	return b.String()
}

func sparkLabel(vals []float64) string {
	var parts []string
	for _, v := range vals {
		if v < 0 {
			parts = append(parts, "–")
		} else {
			parts = append(parts, strconv.Itoa(int(v*100+0.5))+"%")
		}
	}
	return "Fresh share per day, last " + strconv.Itoa(len(vals)) + " days: " + strings.Join(parts, " ")
}
