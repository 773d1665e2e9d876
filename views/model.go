package views

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Seg is one status segment of a bar.
type Seg struct {
	Status string
	N      int64
}

// Bar is a proportional bar of statuses (health bars, buckets).
type Bar struct {
	Segs  []Seg
	Total int64
	// Health marks a partition health bar (fresh, stale, failed, in
	// progress, missing): its legend says how it counts.
	Health bool
	// LastFailed counts the fresh and stale partitions whose last attempt
	// failed (their data is still there).
	LastFailed int64
}

// Tile is one partition in a calendar, matrix or list.
type Tile struct {
	Key    string
	Status string
	Title  string
	Href   string
	Col    int // 1-based column start for the first tile of a row, 0 = auto
	Dim    bool
	// Pos is 1 + the partition's index in its asset's key space (data-pos;
	// 0 = not set, no attribute): selecting on the grid orders a range by
	// it, not by the keys' text.
	Pos int64
}

// GridRow is one calendar or matrix row.
type GridRow struct {
	Label string
	Tiles []Tile
}

// ColumnGroup is a label above the grid's columns from Col (1-based) on.
type ColumnGroup struct {
	Col   int
	Label string
}

// Bucket is a run of consecutive partitions summarised by counts; Span is the
// number of equal buckets merged into it.
type Bucket struct {
	From, To string
	Href     string
	Title    string
	Bar      Bar
	Span     int
	Current  bool
}

// Grid is either tiles (calendar, matrix, list) or buckets.
type Grid struct {
	Mode         string // "calendar", "matrix", "list", "buckets"
	Columns      int
	ColumnLabels []string
	// ColumnGroups name the larger periods above a matrix's columns (the
	// month of its days), each at its first column.
	ColumnGroups []ColumnGroup
	Rows         []GridRow
	Buckets      []Bucket
	BucketSize   int64
	Total        int64 // partitions in the grid's range
	// Unit is what a bucket strip counts, singular: "" for partitions,
	// "chunk" for a backfill's chunk strip.
	Unit string
	// TileTestID, when set, marks every tile with data-testid=TileTestID and
	// data-state=its status (the backfill page's outcome grid; the asset grid
	// leaves it empty to keep its tiles short).
	TileTestID string
}

// AssetSummary is one asset on the overview.
type AssetSummary struct {
	Key, Group, Scheme, CodeVersion, Href string
	Health                                Bar
	LastMaterialized                      string
}

// GroupSummary groups assets by workspace group.
type GroupSummary struct {
	Name   string
	Assets []AssetSummary
}

// Overview is the home page.
type Overview struct {
	Groups          []GroupSummary
	WorkspaceSource string
	Totals          Bar
	Active          []BackfillRow // active backfills (issue 5)
	LineageHref     string        // every asset's graph, loaded into the page (issue 24, item 5)
	Filter          AssetFilter   // what the list shows (issue 24, item 7)
}

// AssetPage is one asset with its grid.
type AssetPage struct {
	Key, Group, Description, Scheme, CodeVersion, Pool, Executor string
	Deps                                                         []Link
	Downstream                                                   []Link
	Lineage                                                      LineageView // the asset and its neighbours
	Freshness                                                    string
	Health                                                       Bar
	History                                                      Grid // the whole space, bucketed
	Detail                                                       Grid // the current window
	From, To                                                     string
	FirstKey, LastKey                                            string
	WindowLabel                                                  string
	ZoomOut, Prev, Next                                          string
	StatusFilter                                                 string
	RangeError                                                   string
	Empty                                                        bool
	// View is "status" (tiles by materialization status) or "staleness"
	// (tiles by staleness reason); the hrefs toggle between them.
	View                  string
	StatusHref, StaleHref string
	Stale                 *StalePanel
	Gaps                  *GapsModel
	// ActiveBackfills are the backfills of this asset not finished yet.
	ActiveBackfills []BackfillRow
	// CanLaunch: the reader may launch backfills (operator and up); viewers
	// get no "Backfill…" controls.
	CanLaunch bool
}

// Link is a labelled href.
type Link struct {
	Label, Href string
}

// KV is a labelled value; with Href, the value is a link there.
type KV struct {
	K, V, Href string
}

// InstanceRow is one partition instance in the history table.
type InstanceRow struct {
	ID, RunID, Status, CodeVersion, Finished, Duration, Error, Metadata, Supersedes, Source string
	RunHref                                                                                 string // the chunk run's page, for instances a backfill built
	Canonical                                                                               bool
}

// PartitionPage is one partition.
type PartitionPage struct {
	AssetKey, AssetHref, Key, Status string
	// Health is the partition's health (catalog.Health), the word the bars
	// count it under; LastAttemptFailed: its data is there although its
	// last attempt failed.
	Health            string
	LastAttemptFailed bool
	// Materialized: the partition has data (a materialization), so an
	// admin may taint it; one that never had any offers no Taint form.
	Materialized             bool
	Href                     string // the page itself, which refreshes while the partition is in progress
	LastMaterialization      []KV
	LastAttempt              []KV
	Instances                []InstanceRow
	Tainted                  string
	Staleness                StalenessView
	Upstream, Downstream     []DepPartitions
	CanTaint                 bool
	TaintAction, ClearAction string
	Taints                   []TaintRow
	HistoryAPI               string
	RebuildHref              string // "Rebuild…" (operators): the new-backfill form with this partition
}

// ErrorPage is shown for 4xx/5xx in the browser.
type ErrorPage struct {
	Status  int
	Title   string
	Message string
	// Back is where the page's way out leads (the section the request
	// was in), Back.Label its words; empty: all assets.
	Back Link
}

// BackLink is the page's way out.
func (e ErrorPage) BackLink() Link {
	if e.Back.Href == "" {
		return Link{Href: "/", Label: "Back to all assets"}
	}
	return e.Back
}

// StatusLabel is the human label of a status.
func StatusLabel(s string) string {
	switch s {
	case "materialized":
		return "Materialized"
	case "failed":
		return "Failed"
	case "in_progress":
		return "In progress"
	case "missing":
		return "Missing"
	case "other":
		return "Other"
	case OutcomeUpstreamFailed:
		return "Upstream failed"
	case OutcomeRunning:
		return "Running"
	case OutcomeQueued:
		return "Queued"
	case OutcomePending:
		return "Pending"
	case OutcomeCanceled:
		return "Canceled"
	}
	if isReason(s) {
		return ReasonLabel(s)
	}
	return s
}

// StatusClass is the CSS class of a status (short: grids repeat it).
func StatusClass(s string) string {
	switch s {
	case "materialized":
		return "s-m"
	case "failed":
		return "s-f"
	case "in_progress":
		return "s-r"
	case "missing", OutcomePending:
		return "s-x"
	case OutcomeUpstreamFailed:
		return "s-u"
	case OutcomeRunning:
		return "s-r"
	case OutcomeQueued:
		return "s-q"
	}
	if isReason(s) {
		return ReasonClass(s)
	}
	return "s-o"
}

// StatusLetter is the non-colour cue of a status.
func StatusLetter(s string) string {
	switch s {
	case "materialized":
		return "M"
	case "failed":
		return "F"
	case "in_progress":
		return "R"
	case "missing", OutcomePending:
		return "·"
	case OutcomeUpstreamFailed:
		return "U"
	case OutcomeRunning:
		return "R"
	case OutcomeQueued:
		return "Q"
	case OutcomeCanceled:
		return "C"
	}
	if isReason(s) {
		return ReasonLetter(s)
	}
	return "?"
}

// Num formats an integer with thousands separators.
func Num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// Pct formats part of total as a percentage.
func Pct(part, total int64) string {
	if total == 0 {
		return "0%"
	}
	// Rounded down, like the CLI: 199 of 200 is "99%", never "100%" before
	// the last partition, and a share that is not zero never reads "0%".
	if part > 0 && part*100 < total {
		return "<1%"
	}
	return fmt.Sprintf("%d%%", part*100/total)
}

// SharePct is a share between 0 and 1 as Pct writes part of total:
// rounded down, "<1%" for a share that is not zero, so that a sparkline's
// day reads as the fresh cell beside it (2 of 3 is "66%" in both).
func SharePct(v float64) string {
	switch {
	case v <= 0:
		return "0%"
	case v < 0.01:
		return "<1%"
	}
	// The epsilon keeps a share such as 0.29 (28.999… × 100) at 29%.
	return fmt.Sprintf("%d%%", int(math.Floor(v*100+1e-9)))
}

// Ago formats a time relative to now.
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

// barRects lays a bar out as SVG rectangles of a given width.
type barRect struct {
	Status string
	X, W   string
	Label  string
}

func barRects(b Bar, width float64) []barRect {
	if b.Total <= 0 {
		return []barRect{{Status: "missing", X: "0", W: ftoa(width), Label: "no partitions"}}
	}
	// A segment of a few partitions among many (3 failed of 10,000) is
	// drawn at least minW wide, taken from the widest, so that it shows:
	// drawn to scale it was a fraction of a pixel, and the bar read all
	// green.
	minW := max(2, width/160)
	ws := make([]float64, len(b.Segs))
	widest, short := -1, 0.0
	for i, s := range b.Segs {
		if s.N <= 0 {
			continue
		}
		ws[i] = float64(s.N) * width / float64(b.Total)
		if ws[i] < minW {
			short += minW - ws[i]
			ws[i] = minW
		}
		if widest < 0 || ws[i] > ws[widest] {
			widest = i
		}
	}
	if short > 0 && widest >= 0 && ws[widest]-short >= minW {
		ws[widest] -= short
	}
	var out []barRect
	x := 0.0
	for i, s := range b.Segs {
		if s.N <= 0 {
			continue
		}
		out = append(out, barRect{Status: s.Status, X: ftoa(x), W: ftoa(ws[i]), Label: StatusLabel(s.Status) + ": " + Num(s.N)})
		x += ws[i]
	}
	return out
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func colClass(c int) string {
	if c <= 1 {
		return ""
	}
	return "c" + strconv.Itoa(c)
}
