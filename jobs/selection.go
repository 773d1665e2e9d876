package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Limits of a backfill request (documented in README).
const (
	MaxChunkSize         = 100_000
	MaxExplicitKeys      = 1_000_000
	MaxConcurrentRunsCap = 10_000
	MaxTitleLen          = 200 // characters, not bytes
)

// Defaults of a backfill request that leaves chunk_size or
// max_concurrent_runs out: the API applies them, the new-backfill form
// pre-fills them and the CLI's --chunk-size and --concurrency default to them
// (documented in README).
const (
	DefaultChunkSize         = 1
	DefaultMaxConcurrentRuns = 4
)

// LaunchDefaults are the chunk size and max concurrent runs of the
// backfills a schedule or a sensor launches: its own, or the defaults for
// those it leaves out (0).
func LaunchDefaults(chunkSize, maxConcurrent int64) (int64, int64) {
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	if maxConcurrent == 0 {
		maxConcurrent = DefaultMaxConcurrentRuns
	}
	return chunkSize, maxConcurrent
}

// NewRequest is a request with the defaults set, to decode a body into:
// fields the body leaves out keep their default, fields it sends (0
// included) are checked as sent.
func NewRequest() Request {
	return Request{ChunkSize: DefaultChunkSize, MaxConcurrentRuns: DefaultMaxConcurrentRuns}
}

// Selector is the compact description of a backfill's partitions.
type Selector struct {
	Type       string              `json:"type"`
	Start      string              `json:"start,omitempty"`
	End        string              `json:"end,omitempty"`
	Keys       []string            `json:"keys,omitempty"`
	Statuses   []string            `json:"statuses,omitempty"`
	Dimensions map[string][]string `json:"dimensions,omitempty"`
}

// Request is a backfill creation (and preview) request.
type Request struct {
	Assets    []string `json:"assets"`
	Selector  Selector `json:"selector"`
	ChunkSize int64    `json:"chunk_size"`
	// ChunkSizes sets the chunk size of some of the assets (asset → size):
	// a backfill of an hourly and a daily asset chunks 24 hours but 7 days.
	ChunkSizes        map[string]int64 `json:"chunk_sizes,omitempty"`
	MaxConcurrentRuns int64            `json:"max_concurrent_runs"`
	Priority          int64            `json:"priority"`
	Title             string           `json:"title"`
}

// InputError is a request error the user can fix; Field names the input.
// Msg says what is wrong in terms of the request, never where to look
// next or through which surface: Code and Params say what happened, for
// the API, the pages and the CLI to word what to do about it.
type InputError struct {
	Field, Msg string
	Conflict   bool // 409 rather than 400
	NotFound   bool
	Err        error // the cause, when it is the store's (a *db.NotFoundError)
	Code       string
	Params     map[string]string
}

// Input error codes (InputError.Code) with the Params each carries.
const (
	CodeUnknownAsset           = "unknown_asset"            // asset
	CodeEmptyKeyList           = "empty_key_list"           // example: a JSON selector with one key, or ""
	CodeEmptySelection         = "empty_selection"          // none: no partition of the assets matches the selector
	CodeUnknownSchedule        = "unknown_schedule"         // schedule, known (comma-separated names)
	CodeScheduleState          = "schedule_state"           // schedule, state (paused or running): already so
	CodeVersionConflict        = "version_conflict"         // backfill, state, version, expected
	CodeInvalidExpectedVersion = "invalid_expected_version" // got
	CodeKeyReused              = "key_reused"               // backfill
	CodeWorkspaceDiffers       = "workspace_differs"        // instance, assets (comma-separated): this instance's workspace differs from the cluster's
)

func (e *InputError) Error() string { return e.Msg }

// Unwrap is the cause, so that callers can tell what was not found.
func (e *InputError) Unwrap() error { return e.Err }

// notFound is the input error of a row the request names but the store lacks.
func notFound(err error) *InputError { return &InputError{NotFound: true, Msg: err.Error(), Err: err} }

func bad(field, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// resolved is a request resolved against the catalog and the store.
type resolved struct {
	req      Request
	segments []db.Segment
	ranges   map[int64][]db.SelRange
	keys     []string
	// keep is the positions of the caller's explicit list that r.keys
	// keeps (nil: all of them, there is no duplicate), and idx the index
	// of each of r.keys in each segment's space, by position.
	keep   []int32
	idx    map[int64][]int64
	total  int64
	chunks int64
	spaces map[string]catalog.Space
	assets []*catalog.Asset
}

// resolve validates req and computes its segments without enumerating ranges.
func (e *Engine) resolve(ctx context.Context, req Request) (*resolved, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	ws, ids := e.workspace()
	ordered, err := selectAssets(ws, req.Assets)
	if err != nil {
		return nil, err
	}
	dyn, err := e.Store.LoadDynamicKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := e.nowFor(ctx) // PreviewAt: jobs/schedule_preview.go
	r := &resolved{req: req, ranges: map[int64][]db.SelRange{}, spaces: map[string]catalog.Space{}, assets: ordered}
	sel := req.Selector
	switch sel.Type {
	case "range", "explicit", "filter":
	case "":
		return nil, bad("selector.type", "selector.type is required: range, explicit or filter")
	default:
		return nil, bad("selector.type", "unknown selector type %q; use range, explicit or filter", sel.Type)
	}
	if err := selectorFieldsFit(sel); err != nil {
		return nil, err
	}
	if sel.Type == "explicit" {
		if err := explicitKeyCount(sel, ordered[0], now, dyn); err != nil {
			return nil, err
		}
	}
	var chunk int64
	for pos, a := range ordered {
		sp := a.Scheme.Space(now, dyn)
		r.spaces[a.Key] = sp
		seg := db.Segment{Pos: int64(pos), Asset: a.Key, AssetID: ids[a.Key], FirstChunk: chunk}
		if err := e.selectIn(ctx, r, &seg, a, sp, ordered); err != nil {
			return nil, err
		}
		if n := req.ChunkSizes[a.Key]; n > 0 {
			seg.ChunkSize = n
		}
		size := seg.Size(req.ChunkSize)
		seg.Chunks = (seg.Partitions + size - 1) / size
		chunk += seg.Chunks
		r.total += seg.Partitions
		r.segments = append(r.segments, seg)
	}
	r.chunks = chunk
	if r.total == 0 {
		return nil, &InputError{Field: "selector", Code: CodeEmptySelection,
			Msg: fmt.Sprintf("the selection is empty: no partition of %s matches", strings.Join(req.Assets, ", "))}
	}
	return r, nil
}

// checkRequest checks a request's limits (chunk size, concurrent runs,
// priority), its title (length, one line) and that it names assets.
func checkRequest(req Request) error {
	if req.ChunkSize <= 0 || req.ChunkSize > MaxChunkSize {
		return bad("chunk_size", "chunk_size must be between 1 and %d, got %d; leave it out for the default, %d", MaxChunkSize, req.ChunkSize, DefaultChunkSize)
	}
	for _, a := range sortedKeys(req.ChunkSizes) {
		field := "chunk_sizes." + a
		if !slices.Contains(req.Assets, a) {
			return bad(field, "chunk_sizes names %q, which is not one of the backfill's assets (%s); give a chunk size only to an asset in assets", a, strings.Join(req.Assets, ", "))
		}
		if n := req.ChunkSizes[a]; n <= 0 || n > MaxChunkSize {
			return bad(field, "the chunk size of %s must be between 1 and %d, got %d; leave it out for chunk_size", a, MaxChunkSize, n)
		}
	}
	if req.MaxConcurrentRuns <= 0 || req.MaxConcurrentRuns > MaxConcurrentRunsCap {
		return bad("max_concurrent_runs", "max_concurrent_runs must be between 1 and %d, got %d; leave it out for the default, %d", MaxConcurrentRunsCap, req.MaxConcurrentRuns, DefaultMaxConcurrentRuns)
	}
	if req.Priority < catalog.MinPriority || req.Priority > catalog.MaxPriority {
		return bad("priority", "priority must be between %d and %d, got %d (higher runs first); leave it out for the default, 0", catalog.MinPriority, catalog.MaxPriority, req.Priority)
	}
	if n := utf8.RuneCountInString(req.Title); n > MaxTitleLen {
		return bad("title", "title is %d characters long; at most %d", n, MaxTitleLen)
	}
	if i := strings.IndexFunc(req.Title, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(req.Title[i:])
		return bad("title", "title holds a control character (%U at byte %d); a title is one line of plain text", r, i)
	}
	if len(req.Assets) == 0 {
		return bad("assets", "assets is required: name at least one asset")
	}
	return nil
}

// selectAssets looks up the requested assets, in dependency order
// (upstreams first); unknown or repeated assets are input errors.
func selectAssets(ws *catalog.Workspace, keys []string) ([]*catalog.Asset, error) {
	seen := map[string]bool{}
	var selected []*catalog.Asset
	for i, k := range keys {
		a := ws.Asset(k)
		if a == nil {
			return nil, &InputError{Field: fmt.Sprintf("assets[%d]", i), Msg: fmt.Sprintf("unknown asset %q", k), Code: CodeUnknownAsset, Params: map[string]string{"asset": k}}
		}
		if seen[k] {
			return nil, bad(fmt.Sprintf("assets[%d]", i), "asset %q is listed twice", k)
		}
		seen[k] = true
		selected = append(selected, a)
	}
	// Dependency order: upstreams first.
	ws.SortTopo(selected)
	return selected, nil
}

// selectIn computes what the request's selector selects of asset a (its
// space sp) as segment seg: its partitions and, for a range or a filter,
// its index ranges (r.ranges); ordered are the assets selected.
func (e *Engine) selectIn(ctx context.Context, r *resolved, seg *db.Segment, a *catalog.Asset, sp catalog.Space, ordered []*catalog.Asset) error {
	sel := r.req.Selector
	switch sel.Type {
	case "range":
		lo, hi, err := e.rangeOf(sp, a, sel.Start, sel.End, ordered)
		if err != nil {
			return err
		}
		r.ranges[seg.Pos] = []db.SelRange{{Start: 0, Lo: lo, Hi: hi}}
		seg.Partitions = hi - lo + 1
	case "explicit":
		if err := r.explicitIn(seg, a, sp); err != nil {
			return err
		}
	case "filter":
		lo, hi, err := e.rangeOf(sp, a, sel.Start, sel.End, ordered)
		if err != nil {
			return err
		}
		rs, n, err := e.snapshotFilter(ctx, a, seg.AssetID, sp, lo, hi, sel)
		if err != nil {
			return err
		}
		r.ranges[seg.Pos] = rs
		seg.Partitions = n
	}
	return nil
}

func (e *Engine) rangeOf(sp catalog.Space, a *catalog.Asset, start, end string, selected []*catalog.Asset) (int64, int64, error) {
	lo, hi, err := e.keyRange(sp, a, start, end)
	if err == nil {
		return lo, hi, nil
	}
	// Time assets of different granularity in one backfill: a range written
	// in another selected asset's keys selects the windows of this asset that
	// overlap the same time span (a day of an hourly asset is its 24 hours).
	ts, ok := a.Scheme.(catalog.TimeScheme)
	if !ok || start == "" || end == "" {
		return 0, 0, err
	}
	for _, o := range selected {
		ots, ok := o.Scheme.(catalog.TimeScheme)
		if !ok || o == a {
			continue
		}
		si, err1 := ots.WindowIndex(start)
		ei, err2 := ots.WindowIndex(end)
		if err1 != nil || err2 != nil || ei < si {
			continue
		}
		from, to := ots.WindowStart(si), ots.WindowStart(ei+1)
		l := max(ts.IndexAt(from), 0)
		h := min(ts.IndexAt(to.Add(-time.Nanosecond)), sp.Len()-1)
		if l > h {
			return 0, 0, bad("selector", "asset %s has no partition between %s and %s", a.Key, start, end)
		}
		return l, h, nil
	}
	return 0, 0, err
}

func (e *Engine) keyRange(sp catalog.Space, a *catalog.Asset, start, end string) (int64, int64, error) {
	n := sp.Len()
	if n == 0 {
		return 0, 0, bad("selector", "asset %s has no partitions yet", a.Key)
	}
	if start == "" && end == "" {
		return 0, n - 1, nil
	}
	s, en := start, end
	if s == "" {
		s = sp.Key(0)
	}
	if en == "" {
		en = sp.Key(n - 1)
	}
	lo, hi, err := catalog.ParseRange(sp, a.Scheme, s, en)
	if err != nil {
		var re *catalog.RangeError
		if errors.As(err, &re) {
			return 0, 0, bad("selector.end", "asset %s: end %q is before start %q", a.Key, end, start)
		}
		field := "selector.start"
		if _, _, err2 := catalog.ParseRange(sp, a.Scheme, s, s); err2 == nil {
			field = "selector.end"
		}
		return 0, 0, bad(field, "asset %s: %v", a.Key, err)
	}
	return lo, hi, nil
}

var filterStatuses = []string{"missing", "failed", "stale", "tainted", "materialized"}

// snapshotFilter resolves a status/dimension filter once, into index ranges.
// Its cost is bounded by the stored rows of the range (plus one key per
// partition when dimensions are filtered).
func (e *Engine) snapshotFilter(ctx context.Context, a *catalog.Asset, assetID int64, sp catalog.Space, lo, hi int64, sel Selector) ([]db.SelRange, int64, error) {
	want, err := filterWant(sel)
	if err != nil {
		return nil, 0, err
	}
	var ms catalog.MultiScheme
	if len(sel.Dimensions) > 0 {
		if ms, err = filterDimensions(a, sel.Dimensions); err != nil {
			return nil, 0, err
		}
	}
	// Stored rows of the range, in index order.
	rows, err := e.Store.SelectionRows(ctx, assetID, lo, hi)
	if err != nil {
		return nil, 0, err
	}
	// "stale" means what the staleness view shows: any reason but
	// NEVER_MATERIALIZED (TAINTED, CODE_CHANGED, UPSTREAM_CHANGED, FRESHNESS),
	// classified by the same code at this moment.
	var stale []catalog.IndexRange
	if want["stale"] {
		var err error
		if stale, err = e.staleRanges(ctx, a, lo, hi); err != nil {
			return nil, 0, err
		}
	}
	missing := want["missing"] || len(want) == 0
	b := &selBuilder{ms: ms, sp: sp, dims: sel.Dimensions}
	next := lo
	for _, r := range rows {
		if missing {
			b.addRange(next, r.Idx-1)
		}
		if filterMatches(want, stale, r) {
			b.add(r.Idx)
		}
		next = r.Idx + 1
	}
	if missing {
		b.addRange(next, hi)
	}
	return b.out, b.n, nil
}

// filterWant checks a filter's statuses and returns them as a set; a filter
// names statuses or dimensions.
func filterWant(sel Selector) (map[string]bool, error) {
	want := map[string]bool{}
	for i, s := range sel.Statuses {
		if !slices.Contains(filterStatuses, s) {
			return nil, bad(fmt.Sprintf("selector.statuses[%d]", i), "unknown status %q; use missing, failed, stale or tainted", s)
		}
		want[s] = true
	}
	if len(want) == 0 && len(sel.Dimensions) == 0 {
		return nil, bad("selector.statuses", "a filter needs statuses or dimensions")
	}
	return want, nil
}

// filterDimensions checks a filter's dimension values against asset a,
// which must be multi-dimensional, and returns its scheme.
func filterDimensions(a *catalog.Asset, dims map[string][]string) (catalog.MultiScheme, error) {
	m, ok := a.Scheme.(catalog.MultiScheme)
	if !ok {
		return nil, bad("selector.dimensions", "asset %s is not multi-dimensional", a.Key)
	}
	// In name order, so that of several wrong names the same one is named.
	for _, name := range slices.Sorted(maps.Keys(dims)) {
		values := dims[name]
		var dim *catalog.Dimension
		var names []string
		for _, d := range m.Dimensions() {
			names = append(names, d.Name)
			if d.Name == name {
				dim = &d
			}
		}
		if dim == nil {
			return nil, bad("selector.dimensions", "asset %s has no dimension %q%s; its dimensions are %s", a.Key, name, catalog.Suggest(name, names), strings.Join(names, ", "))
		}
		if len(values) == 0 {
			return nil, bad("selector.dimensions."+name, "dimension %s lists no value: name at least one, or leave %s out to take all of its values", name, name)
		}
		for i, v := range values {
			if err := dim.Scheme.ValidateKey(v); err != nil {
				return nil, bad(fmt.Sprintf("selector.dimensions.%s[%d]", name, i), "asset %s, dimension %s: %v", a.Key, name, err)
			}
		}
	}
	return m, nil
}

// filterMatches reports whether a stored row matches the statuses wanted
// (stale: the stale ranges); with none wanted, whether it is not in
// progress.
func filterMatches(want map[string]bool, stale []catalog.IndexRange, r db.SelectionRow) bool {
	if len(want) == 0 {
		return r.Status != db.StatusInProgress
	}
	switch {
	case want["failed"] && r.Status == db.StatusFailed:
		return true
	case want["tainted"] && r.TaintedAt != nil:
		return true
	case want["stale"] && r.Mat && inRanges(stale, r.Idx):
		return true
	case want["materialized"] && r.Status == db.StatusMaterialized:
		return true
	}
	return false
}

// selBuilder collects the selected indexes, in increasing order, as
// ranges (out) numbered from 0 across them (n selected so far); with a
// multi-dimensional scheme ms, only the keys matching dims.
type selBuilder struct {
	ms   catalog.MultiScheme
	sp   catalog.Space
	dims map[string][]string
	out  []db.SelRange
	n    int64
}

func (b *selBuilder) add(i int64) {
	if b.ms != nil && !b.ms.MatchDims(b.sp.Key(i), b.dims) {
		return
	}
	if l := len(b.out); l > 0 && b.out[l-1].Hi == i-1 {
		b.out[l-1].Hi = i
	} else {
		b.out = append(b.out, db.SelRange{Start: b.n, Lo: i, Hi: i})
	}
	b.n++
}

func (b *selBuilder) addRange(from, to int64) {
	if from > to {
		return
	}
	if b.ms == nil {
		if l := len(b.out); l > 0 && b.out[l-1].Hi == from-1 {
			b.out[l-1].Hi = to
		} else {
			b.out = append(b.out, db.SelRange{Start: b.n, Lo: from, Hi: to})
		}
		b.n += to - from + 1
		return
	}
	for i := from; i <= to; i++ {
		b.add(i)
	}
}

// staleRanges lists the stale (not merely never materialized) partitions of
// a in [lo, hi] with the staleness view's own classification.
func (e *Engine) staleRanges(ctx context.Context, a *catalog.Asset, lo, hi int64) ([]catalog.IndexRange, error) {
	ws, ids := e.workspace()
	dyn, err := e.Store.LoadDynamicKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := e.Now()
	in := db.StaleInput{WS: ws, IDs: ids, SpaceOf: func(x *catalog.Asset) catalog.Space { return x.Scheme.Space(now, dyn) }}
	version, err := e.Store.SyncStaleness(ctx, in)
	if err != nil {
		return nil, err
	}
	facts, err := e.Store.StaleFactsAt(ctx, in, a, version)
	if err != nil {
		return nil, err
	}
	return facts.StaleRanges(lo, hi, now, false), nil
}

// inRanges reports whether i lies in one of the sorted, disjoint ranges.
func inRanges(rs []catalog.IndexRange, i int64) bool {
	j, _ := slices.BinarySearchFunc(rs, i, func(r catalog.IndexRange, i int64) int {
		switch {
		case r.Hi < i:
			return -1
		case r.Lo > i:
			return 1
		}
		return 0
	})
	return j < len(rs) && rs[j].Lo <= i && i <= rs[j].Hi
}

// selectorFieldsFit refuses a field that the selector's type does not use,
// rather than ignore it and select more than the caller meant: range takes
// start and end; filter takes statuses, dimensions, start and end; explicit
// takes keys only.
func selectorFieldsFit(sel Selector) error {
	type field struct {
		name string
		set  bool
	}
	fields := []field{{"start", sel.Start != ""}, {"end", sel.End != ""}, {"keys", sel.Keys != nil},
		{"statuses", sel.Statuses != nil}, {"dimensions", sel.Dimensions != nil}}
	uses := map[string]string{
		"range":    "start, end",
		"explicit": "keys",
		"filter":   "statuses, dimensions, start, end",
	}[sel.Type]
	for _, f := range fields {
		if f.set && !slices.Contains(strings.Split(uses, ", "), f.name) {
			hint := ""
			switch f.name {
			case "statuses", "dimensions":
				hint = `; to select by status or dimension use {"type": "filter"}`
			case "keys":
				hint = `; to list keys use {"type": "explicit"}`
			case "start", "end":
				hint = "; an explicit list selects exactly its keys"
			}
			return bad("selector."+f.name, "selector.%s does not apply to %s %s selector, which takes %s%s", f.name, article(sel.Type), sel.Type, uses, hint)
		}
	}
	return nil
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// sortedKeys is m's keys in order (an error names the first bad one the
// same way each time).
func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
