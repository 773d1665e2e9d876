package views

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// BackfillRow is one backfill in the list or on the overview.
type BackfillRow struct {
	ID, Href, Title, State, StateLabel string
	Assets                             []string
	Progress                           Bar // materialized / failed / in_progress / missing (pending)
	Started, Duration, CreatedBy       string
	// Recovered is the Retry failed child that rebuilt all a failed
	// backfill failed to build (nil: none did).
	Recovered *Link
}

// BackfillsPage is the backfills list.
type BackfillsPage struct {
	Rows      []BackfillRow
	States    []string
	State     string // filter, "" = all
	Assets    []string
	Asset     string // filter, "" = all
	Next      string // href of the next page, "" = last page
	First     string // href of the first page when not on it
	CanLaunch bool
	LiveRows  string // href of the table alone, fetched on every backfill change
}

// Action is a transition button.
type Action struct {
	Name        ActionName
	Label, Href string
}

// ActionName is a button of the backfill page; the handler that lists the
// buttons and the one that takes their forms share these names (the last
// part of the form's path, except terminate, which posts to cancel).
type ActionName string

// The backfill page's buttons.
const (
	ActionPause       ActionName = "pause"
	ActionResume      ActionName = "resume"
	ActionCancel      ActionName = "cancel"
	ActionTerminate   ActionName = "terminate" // cancel, ending the running chunks
	ActionRetryFailed ActionName = "retry-failed"
)

// BackfillDetail is the backfill page.
type BackfillDetail struct {
	ID, Href, Title, State, StateLabel, StateClass string
	StateVersion                                   int64
	Assets                                         []Link
	Selector                                       string
	CreatedBy, Created, Started, Finished          string
	Progress                                       Bar
	Counts                                         []KV
	PctDone                                        string
	Throughput, ETA                                string
	Chart                                          Chart
	Actions                                        []Action
	RetryRequestID                                 string
	Relaunch                                       *Relaunch // a canceled or failed backfill's "Backfill what it did not build…" (operators)
	Children                                       []Link
	Parent                                         *Link
	Recovered                                      *Link  // the retry that rebuilt all a failed backfill failed to build
	Message                                        string // conflict or refusal, shown on top
	Grids                                          []ChunkGrid
	Chunks                                         ChunkTable
	Gantt                                          Gantt // the chunk timeline (the page only: its partial redraws it)
	Events                                         []EventRow
	Live                                           bool // not terminal: the page subscribes to updates
	Countdown                                      bool // the ETA counts down to a retry: refresh it every few seconds
	CSRF                                           string
}

// Relaunch is the backfill page's "Backfill what it did not build…": the
// new-backfill form prefilled with what a canceled or failed backfill left,
// opened by the link Href or, when that address would be too long (a long
// key list), by posting Fields to the form's preview. Note says what the
// form will hold (or that nothing is left); Unavailable why the form cannot
// take it, with the CLI and API alternative.
type Relaunch struct {
	Href        string
	Fields      []KV
	Note        string
	Unavailable string
}

// ChunkGrid is one asset's selection coloured by this backfill's outcome:
// one tile per partition (Partition) when the segment is small, else one
// tile per chunk (Tiles) or buckets of chunks (Strip).
type ChunkGrid struct {
	Asset      string
	Partitions int64
	Chunks     int64
	Partition  *Grid    // one tile per selected partition (Outcome* statuses)
	Tiles      []Tile   // one per chunk (run states) when the selection is larger
	Strip      []Bucket // buckets of chunks when there are many
	Size       int64    // chunks per bucket
}

// Outcomes of a partition in one backfill (partition tiles of the backfill
// page), in legend order.
const (
	OutcomeMaterialized   = "materialized"    // its chunk's run built it
	OutcomeFailed         = "failed"          // its chunk's run failed to build it
	OutcomeUpstreamFailed = "upstream_failed" // skipped: an upstream partition failed in this backfill
	OutcomeRunning        = "running"         // its chunk's run is building it
	OutcomeQueued         = "queued"          // its chunk's run waits for a slot or a retry
	OutcomePending        = "pending"         // its chunk is not planned yet
	OutcomeCanceled       = "canceled"        // its chunk's run was canceled, or never will be planned
)

// Outcomes lists the partition outcomes in legend order.
var Outcomes = []string{OutcomeMaterialized, OutcomeFailed, OutcomeUpstreamFailed, OutcomeRunning, OutcomeQueued, OutcomePending, OutcomeCanceled}

// OutcomeLabel is an outcome as people read it (tooltips).
func OutcomeLabel(o string) string { return strings.ReplaceAll(o, "_", " ") }

// ChunkRow is one row of the chunk table.
type ChunkRow struct {
	Chunk                              int64
	RunID, RunHref, Asset, Keys, State string
	Partitions, Materialized, Failed   int64
	Attempts, MaxAttempts              int64
	Interrupted                        int64 // attempts ended by a crash or restart (not counted against MaxAttempts)
	Duration, Error                    string
	// Wait says why a queued chunk has not started; WaitHref links the
	// run it waits for, when another run holds its partitions.
	Wait, WaitHref string
}

// ChunkTable is one page of a backfill's chunks.
type ChunkTable struct {
	Rows              []ChunkRow
	State             string
	States            []string
	Next, First, Base string
	Planned, Total    int64
	Countdown         bool // a row waits out a retry's backoff: refresh it every few seconds
}

// EventRow is one timeline entry.
type EventRow struct {
	At, Type, Actor, Text string
}

// Chart is a server-rendered throughput chart.
type Chart struct {
	Points         []ChartPoint
	Max            int64
	Width, Height  int
	XLabel, YLabel string
	Empty          bool
}

// ChartPoint is one bar of the chart.
type ChartPoint struct {
	X, W, Y, H float64 // SVG user units, drawn with one decimal
	Title      string
}

// NewBackfillForm is the new-backfill form with its values and errors.
type NewBackfillForm struct {
	Assets   []AssetChoice
	Selector string // range, explicit, missing_failed, stale, missing_stale, statuses, gaps
	// Statuses are the statuses ticked under "Only partitions that are"
	// (selector statuses): values of StatusChoices, as posted (unknown
	// ones are refused, not dropped).
	Statuses   []string
	Start, End string
	Keys       string
	Dimension  string // name=value for multi-dimensional assets
	// DimensionChoices are the workspace's multi-dimensional assets'
	// values (name=value) to pick from; DimensionsComplete is false when
	// there were too many to list (the picker is then a text box).
	DimensionChoices   []string
	DimensionsComplete bool
	ChunkSize          string
	// ChunkSizes are the per-asset chunk sizes filled in (asset → text as
	// posted), which override ChunkSize for that asset.
	ChunkSizes     map[string]string
	MaxConcurrent  string
	Priority       string
	Title          string
	IdempotencyKey string
	// UnknownAssets are asset names asked for (in the address or the
	// posted form) that the workspace does not declare: reported, not dropped.
	UnknownAssets []string
	Errors        map[string]string
	Preview       *PreviewView
	CanLaunch     bool
	// SignIn, when nobody is signed in (an anonymous viewer), is the
	// sign-in page that comes back to this form: launching needs an account.
	SignIn string
}

// SelectorChoice is one option of the form's Partitions choice: Value is
// its selector= in the form and the address, Label what the form calls it,
// Hint the rest of its text on the form.
type SelectorChoice struct {
	Value, Label, Hint string
}

// SelectorChoices are the form's selections, in the form's order; the
// first is the default.
var SelectorChoices = []SelectorChoice{
	{"range", "Every partition in the range", ""},
	{"statuses", "Only partitions that are", " (tick one or more), in the range"},
	{"gaps", "Fill gaps up to the watermark", " (one asset; Start = fill from that key, empty = only holes inside the materialized range)"},
	{"explicit", "These keys", " (one per line below)"},
}

// SelectorAliases are selections the form offered before its statuses
// took them in, still read from addresses and links (the grid's bar, a
// relaunch, bookmarks): each is "Only partitions that are" with these ticked.
var SelectorAliases = map[string][]string{
	"missing_failed": {"missing", "failed"},
	"stale":          {"stale"},
	"missing_stale":  {"missing", "stale"},
}

// StatusChoice is one status of the form's "Only partitions that are"
// choice: Value is its status= (the API's filter status), Hint says it in
// the form's words.
type StatusChoice struct {
	Value, Hint string
}

// StatusChoices are the statuses the form filters on, in the API's order.
var StatusChoices = []StatusChoice{
	{"missing", "never materialized"},
	{"failed", "the last attempt failed"},
	{"stale", "materialized, but out of date"},
	{"tainted", "marked invalid by a user"},
}

// StatusTicked says whether status v is ticked under "Only partitions that are".
func (f NewBackfillForm) StatusTicked(v string) bool { return slices.Contains(f.Statuses, v) }

// KnownSelector says whether v is one of SelectorChoices.
func KnownSelector(v string) bool {
	return slices.ContainsFunc(SelectorChoices, func(c SelectorChoice) bool { return c.Value == v })
}

// SelectorTicked says whether choice v is ticked: the form's selection, or
// the default when there is none or it is no choice of the form (the
// message next to the choices says so).
func (f NewBackfillForm) SelectorTicked(v string) bool {
	if KnownSelector(f.Selector) {
		return f.Selector == v
	}
	return v == SelectorChoices[0].Value
}

// AssetChunkSize is the chunk size filled in for asset a ("" = the
// form's chunk size).
func (f NewBackfillForm) AssetChunkSize(a string) string { return f.ChunkSizes[a] }

// AssetChoice is one asset checkbox.
type AssetChoice struct {
	Key, Scheme string
	Checked     bool
	Upstream    bool // offered because a checked asset depends on it
	FirstKey    string
	LastKey     string
}

// PreviewView is the preview panel.
type PreviewView struct {
	Error        string
	Field        string
	Partitions   int64
	Chunks       int64
	Runs         int64
	Assets       []PreviewAsset
	FirstChunk   []string
	FirstAsset   string
	Status       Bar   // the selection's status counts (the legend)
	StatusBar    Bar   // the same, materialized split into fresh and stale, as drawn
	Stale        int64 // of the materialized partitions, how many are stale now
	SkippedCount int64
	Skipped      []KV
	Estimate     Estimate
	Gaps         *GapsModel // the ranges a "Fill gaps" selection fills
	// Duplicates counts the lines of an explicit list that repeat an
	// earlier key (each partition is built once); DuplicateNote says so,
	// naming them with their lines.
	Duplicates    int
	DuplicateNote string
}

// PreviewAsset is one asset of a preview.
type PreviewAsset struct {
	Asset              string
	Partitions, Chunks int64
	Status             Bar
	Grid               *Grid // the selection's current status, bucketed (range selections)
}

// RunPage is one run.
type RunPage struct {
	ID, RunKey, BackfillID, BackfillHref, Asset, AssetHref, State string
	// BackfillName names the run's backfill in the title and breadcrumb
	// (db.Backfill.Name; its id is a detail).
	BackfillName                         string
	Chunk, Partitions                    int64
	Materialized, Failed, UpstreamFailed int64
	Keys                                 string // first … last, or first, …, last (not contiguous)
	Attempts                             []AttemptRow
	PartitionRows                        []RunPartitionRow
	Log                                  string
	LogAttempt                           int64
	LogPicked                            bool // LogAttempt was asked for (?attempt=N), not the latest
	Live                                 bool
	Error                                string
	// Wait says why a queued run has not started (WaitHref: the run it waits for).
	Wait, WaitHref string
}

// RunPartitionRow is one partition of a run and what the run did to it.
type RunPartitionRow struct {
	Key, Href, Status, Error string
	Attempt                  int64
}

// AttemptRow is one attempt of a run.
type AttemptRow struct {
	N                                      int64
	State, Started, Duration, Error, Owner string
}

// BackfillStateLabel is a backfill state as people read it.
func BackfillStateLabel(state string, failures int64) string {
	s := strings.ToLower(state)
	if state == "PAUSED" && failures > 0 {
		return "Paused, with failures"
	}
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// RunStateClass maps run and chunk states onto the status palette.
func RunStateClass(state string) string {
	switch state {
	case "succeeded", "SUCCEEDED", "materialized":
		return "s-m"
	case "failed", "FAILED", "timeout":
		return "s-f"
	case "upstream_failed":
		return "s-u"
	case "running", "RUNNING", "in_progress":
		return "s-r"
	case "queued":
		return "s-q" // as the outcome grid and its legend draw a queued chunk
	case "pending", "PENDING", "", "not_run":
		return "s-x"
	}
	return "s-o"
}

// RunStateLetter is the non-colour cue of a run state.
func RunStateLetter(state string) string {
	switch strings.ToLower(state) {
	case "succeeded", "materialized":
		return "✓"
	case "failed":
		return "✗"
	case "upstream_failed":
		return "U"
	case "running", "in_progress":
		return "▶"
	case "queued":
		return "Q"
	case "pending", "not_run":
		return "·"
	case "canceled", "canceling":
		return "⊘"
	case "paused":
		return "Ⅱ"
	case "timeout":
		return "⏱"
	case "interrupted":
		return "↻"
	}
	return "?"
}

// ProgressLabel names the segments of a backfill progress bar.
func ProgressLabel(status string) string {
	switch status {
	case "materialized":
		return "Succeeded"
	case "failed":
		return "Failed"
	case "in_progress":
		return "Running"
	case "missing":
		return "Pending"
	case OutcomeCanceled:
		return "Canceled"
	}
	return StatusLabel(status)
}

func progressText(b Bar) string {
	if b.Total == 0 {
		return "no partitions"
	}
	parts := make([]string, 0, len(b.Segs))
	for _, s := range b.Segs {
		parts = append(parts, ProgressLabel(s.Status)+" "+Num(s.N)+" ("+Pct(s.N, b.Total)+")")
	}
	return strings.Join(parts, ", ")
}

func bfN(n int64) string { return strconv.FormatInt(n, 10) }

// RunLogHref is a run page showing attempt n's log.
func RunLogHref(runID string, n int64) string {
	return "/runs/" + url.PathEscape(runID) + "?attempt=" + strconv.FormatInt(n, 10) + "#log"
}

// RunLiveHref is the address the run page polls (keeping a chosen attempt's log).
func RunLiveHref(r RunPage) string {
	h := "/runs/" + r.ID + "/live"
	if r.LogPicked {
		h += "?attempt=" + strconv.FormatInt(r.LogAttempt, 10)
	}
	return h
}
