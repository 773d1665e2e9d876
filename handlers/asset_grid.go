package handlers

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// TileLimit is the most partitions drawn one tile each; larger ranges are
// drawn as buckets. It keeps every page under a few hundred KB whatever the
// size of the asset.
const TileLimit = 1000

// HistoryBuckets is the number of buckets of the whole-history strip.
const HistoryBuckets = 120

// gridLayout says how an asset's partitions are laid out as tiles.
type gridLayout struct {
	mode    string // calendar, matrix, list
	columns int
	labels  []string           // column labels; matrix: the row label of each combination of the other dimensions
	ts      catalog.TimeScheme // calendar and matrix
	loc     *time.Location
	rowSize int64 // matrix: partitions per row
}

func layoutFor(a assetCtx) gridLayout {
	ts, dim, ok := catalog.SchemeTimeDim(a.Def.Scheme)
	if !ok {
		return gridLayout{mode: "list"}
	}
	if dim >= 0 && a.Def.Scheme.Kind() == catalog.KindMulti {
		per := int64(1)
		if ms, ok := a.Space.(interface{ DimSpaces() []catalog.Space }); ok {
			for i, d := range ms.DimSpaces() {
				if i != dim {
					per *= d.Len()
				}
			}
		}
		if per < 1 || per > 64 {
			return gridLayout{mode: "list"}
		}
		l := gridLayout{mode: "matrix", columns: int(per), ts: ts, loc: ts.Location(), rowSize: per}
		for c := int64(0); c < per && c < a.Space.Len(); c++ {
			l.labels = append(l.labels, otherParts(a.Def.Scheme, a.Space.Key(c)))
		}
		return l
	}
	l := gridLayout{mode: "calendar", ts: ts, loc: ts.Location()}
	switch ts.Unit() {
	case catalog.KindHourly:
		l.columns = 24
		for i := range 24 {
			l.labels = append(l.labels, fmt.Sprintf("%02d", i))
		}
	case catalog.KindDaily:
		l.columns = 31
		for i := 1; i <= 31; i++ {
			l.labels = append(l.labels, fmt.Sprint(i))
		}
	case catalog.KindWeekly:
		l.columns = 53
		for i := 1; i <= 53; i++ {
			if i%4 == 1 {
				l.labels = append(l.labels, fmt.Sprint(i))
			} else {
				l.labels = append(l.labels, "")
			}
		}
	default:
		l.columns = 12
		for m := time.January; m <= time.December; m++ {
			l.labels = append(l.labels, m.String()[:3])
		}
	}
	return l
}

// otherParts is a multi key without its time part.
func otherParts(s catalog.Scheme, key string) string {
	ms, ok := s.(catalog.MultiScheme)
	if !ok {
		return key
	}
	parts, err := ms.Split(key)
	if err != nil {
		return key
	}
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		if i != ms.TimeDim() {
			out = append(out, p)
		}
	}
	return strings.Join(out, "·")
}

// maxTiles is the most partitions drawn as tiles in this layout: a matrix
// shows about two months of rows, whatever its width.
func (l gridLayout) maxTiles() int64 {
	if l.mode == "matrix" {
		return min(TileLimit, 62*l.rowSize)
	}
	return TileLimit
}

// rowOf places partition i: its row label and 1-based column.
func (l gridLayout) rowOf(a assetCtx, i int64) (string, int) {
	switch l.mode {
	case "matrix":
		key := a.Space.Key(i)
		parts := strings.SplitN(key, catalog.MultiSep, 2)
		return parts[0], int(i%l.rowSize) + 1
	case "calendar":
		t := l.ts.WindowStart(i).In(l.loc)
		switch l.ts.Unit() {
		case catalog.KindHourly:
			return t.Format("Mon 2006-01-02"), t.Hour() + 1
		case catalog.KindDaily:
			return t.Format("Jan 2006"), t.Day()
		case catalog.KindWeekly:
			return t.Format("2006"), (t.YearDay()-1)/7 + 1
		default:
			return t.Format("2006"), int(t.Month())
		}
	}
	return "", 0
}

// rowStartAfter returns the first index >= i that starts a row, so that a
// window shows whole rows.
func (l gridLayout) rowStartAfter(a assetCtx, i int64) int64 {
	n := a.Space.Len()
	switch l.mode {
	case "matrix":
		return min((i+l.rowSize-1)/l.rowSize*l.rowSize, n-1)
	case "calendar":
		label, col := l.rowOf(a, i)
		if col == 1 || i == 0 {
			return i
		}
		for j := i + 1; j < n && j < i+400; j++ {
			if lb, _ := l.rowOf(a, j); lb != label {
				return j
			}
		}
	}
	return i
}

// staleOverlay marks materialized partitions that are stale in a status
// grid (nil: no marking), as the header's bar counts them.
type staleOverlay struct {
	facts *db.StaleFacts
	now   time.Time
}

// tileGrid draws [lo, hi] as tiles; with st, a materialized partition
// that is stale is drawn as stale, its reason in its title.
func (h *Handler) tileGrid(ctx context.Context, a assetCtx, l gridLayout, lo, hi int64, filter string, st *staleOverlay) (views.Grid, error) {
	rows, err := h.Store.StatusRange(ctx, a.ID, lo, hi)
	if err != nil {
		return views.Grid{}, err
	}
	byIdx := make([]*db.PartitionStatus, hi-lo+1)
	for i := range rows {
		if r := &rows[i]; r.Idx >= lo && r.Idx <= hi {
			byIdx[r.Idx-lo] = r
		}
	}
	keys := a.Space.Keys(lo, hi-lo+1)
	tiles := make([]views.Tile, len(keys))
	idx := make([]int64, len(keys))
	for j, key := range keys {
		idx[j] = lo + int64(j)
		tiles[j] = tileFor(a, key, byIdx[j])
		tiles[j].Pos = idx[j] + 1
		if st != nil && (tiles[j].Status == db.StatusMaterialized || tiles[j].Status == db.StatusFailed) {
			// The tile reads as the bars count it (catalog.HealthOf): a
			// failed last attempt over data still there is fresh or stale.
			hl, r, lastFailed := st.facts.HealthAt(idx[j], st.now)
			switch hl {
			case catalog.HealthFresh:
				tiles[j].Status = db.StatusMaterialized
			case catalog.HealthStale:
				tiles[j].Status = views.SegStale
				tiles[j].Title += " · stale: " + views.ReasonLabel(string(r))
			}
			if lastFailed {
				tiles[j].Title += " · last attempt failed, its data is still there"
			}
		}
		tiles[j].Dim = filter != "" && tiles[j].Status != filter && !(filter == db.StatusMaterialized && tiles[j].Status == views.SegStale)
	}
	return l.layTiles(a, idx, tiles), nil
}

// layTiles places tiles (tiles[j] is partition idx[j], indexes ascending) in
// rows of the layout, newest row first. A tile starts at its own column when
// it opens a row or follows a gap (a selection need not be contiguous).
func (l gridLayout) layTiles(a assetCtx, idx []int64, tiles []views.Tile) views.Grid {
	if l.mode == "matrix" {
		return l.layMatrix(idx, tiles)
	}
	g := views.Grid{Mode: l.mode, Columns: l.columns, ColumnLabels: l.labels, Total: int64(len(tiles))}
	if l.mode == "list" {
		g.Rows = []views.GridRow{{Tiles: tiles}}
		return g
	}
	labels := make([]string, len(tiles))
	cols := make([]int, len(tiles))
	for j := range tiles {
		labels[j], cols[j] = l.rowOf(a, idx[j])
	}
	if rep := l.repeatedHour(idx, labels, cols); rep > 0 {
		// A day the clocks go back has 25 hours, one of them twice: the
		// grid draws 25 columns, the second of the repeated hour under a
		// header of its own, and every later hour one column right, so
		// that each tile sits under its hour (other days leave the extra
		// column empty, as the day the clocks go forward leaves its
		// missing hour).
		g.Columns = l.columns + 1
		g.ColumnLabels = slices.Insert(slices.Clone(l.labels), rep, l.labels[rep-1])
		for j := range cols {
			again := j > 0 && idx[j] == idx[j-1]+1 && labels[j] == labels[j-1] && cols[j] == rep && cols[j-1] == rep
			if cols[j] > rep || again {
				cols[j]++
			}
		}
	}
	prev := 0
	for j, t := range tiles {
		label, col := labels[j], cols[j]
		if len(g.Rows) == 0 || g.Rows[len(g.Rows)-1].Label != label {
			g.Rows = append(g.Rows, views.GridRow{Label: label})
			prev = 0
		}
		if col > prev+1 || prev == 0 {
			t.Col = col
		}
		prev = col
		r := &g.Rows[len(g.Rows)-1]
		r.Tiles = append(r.Tiles, t)
	}
	slices.Reverse(g.Rows) // newest first
	return g
}

// layMatrix places a multi-dimensional asset's tiles with time across: a
// row per combination of its other dimensions (in key order, labelled with
// their values), a column per time window of the tiles, oldest left. Two
// months of a day × region asset read as three rows of readable tiles
// rather than a strip 62 rows tall with upright headers. The header names
// each window (day of the month, hour, week's day, month) and, above it,
// the larger period it starts (month, day, year).
func (l gridLayout) layMatrix(idx []int64, tiles []views.Tile) views.Grid {
	g := views.Grid{Mode: "matrix", Total: int64(len(tiles))}
	if len(tiles) == 0 {
		return g
	}
	t0, t1 := idx[0]/l.rowSize, idx[len(idx)-1]/l.rowSize
	g.Columns = int(t1 - t0 + 1)
	g.ColumnLabels, g.ColumnGroups = l.timeHeads(t0, t1)
	rowOf := map[int64]int{}
	var combos []int64
	for j := range tiles {
		if c := idx[j] % l.rowSize; !slices.Contains(combos, c) {
			combos = append(combos, c)
		}
	}
	slices.Sort(combos)
	for r, c := range combos {
		label := ""
		if c < int64(len(l.labels)) {
			label = l.labels[c]
		}
		rowOf[c] = r
		g.Rows = append(g.Rows, views.GridRow{Label: label})
	}
	for j, t := range tiles {
		t.Col = int(idx[j]/l.rowSize-t0) + 1
		r := &g.Rows[rowOf[idx[j]%l.rowSize]]
		r.Tiles = append(r.Tiles, t)
	}
	return g
}

// timeHeads labels the time windows t0…t1 of a matrix: each window's own
// label, and the larger periods they fall in, each named at its first
// column (the first column always; then where a new one starts, when the
// previous name has had room, 4 columns).
func (l gridLayout) timeHeads(t0, t1 int64) ([]string, []views.ColumnGroup) {
	var labels []string
	var groups []views.ColumnGroup
	lastGroup, lastCol := "", -10
	for t := t0; t <= t1; t++ {
		w := l.ts.WindowStart(t).In(l.loc)
		var label, group string
		switch l.ts.Unit() {
		case catalog.KindHourly:
			label, group = w.Format("15"), w.Format("Mon Jan 2")
		case catalog.KindDaily, catalog.KindWeekly:
			label, group = fmt.Sprint(w.Day()), w.Format("Jan 2006")
		default:
			label, group = fmt.Sprint(int(w.Month())), w.Format("2006")
		}
		col := int(t-t0) + 1
		labels = append(labels, label)
		if group != lastGroup && col-lastCol >= 4 {
			groups = append(groups, views.ColumnGroup{Col: col, Label: group})
			lastCol = col
		}
		lastGroup = group
	}
	return labels, groups
}

// repeatedHour is the column of an hourly calendar's hour that a day of
// tiles has twice (two consecutive partitions in one row and one column:
// the clocks went back), or 0.
func (l gridLayout) repeatedHour(idx []int64, labels []string, cols []int) int {
	if l.mode != "calendar" || l.ts.Unit() != catalog.KindHourly {
		return 0
	}
	for j := 1; j < len(cols); j++ {
		if idx[j] == idx[j-1]+1 && labels[j] == labels[j-1] && cols[j] == cols[j-1] {
			return cols[j]
		}
	}
	return 0
}

func tileFor(a assetCtx, key string, r *db.PartitionStatus) views.Tile {
	t := views.Tile{Key: key, Status: db.StatusMissing, Href: PartitionHref(a.Def.Key, key)}
	var b strings.Builder
	b.WriteString(key)
	if r == nil {
		b.WriteString(" · missing")
		t.Title = b.String()
		return t
	}
	t.Status = r.Status
	b.WriteString(" · ")
	b.WriteString(r.Status)
	if r.LastMatAt != nil {
		if r.Status == db.StatusMaterialized {
			b.WriteString(" ")
		} else {
			b.WriteString(" · last materialized ")
		}
		b.WriteString(fmtMinute(a.zone(), db.FromMillis(*r.LastMatAt)))
	}
	if r.LastAttemptRunID != nil {
		b.WriteString(" · run ")
		b.WriteString(*r.LastAttemptRunID)
	}
	t.Title = b.String()
	return t
}

// bucketGrid draws [lo, hi] as about n buckets, merging neighbours that hold
// a single equal status into one run.
func (h *Handler) bucketGrid(ctx context.Context, a assetCtx, lo, hi int64, n int64, filter string, cur [2]int64, q url.Values, st *staleOverlay) (views.Grid, error) {
	total := hi - lo + 1
	size := max((total+n-1)/n, 1)
	if total >= 64*db.RollupBlock {
		// Align to rollup blocks so counting reads the rollup, not the rows.
		size = (size + db.RollupBlock - 1) / db.RollupBlock * db.RollupBlock
		lo = lo / db.RollupBlock * db.RollupBlock
	}
	g := bucketGridBuilder{&views.Grid{Mode: "buckets", BucketSize: size, Total: total}}
	if st != nil {
		// Counted as the bars count (StaleFacts.Health).
		for b, c := range st.facts.HealthBuckets(lo, hi, size, st.now) {
			from := lo + int64(b)*size
			to := min(from+size-1, hi)
			bar := healthBar(c)
			bar.Health = false
			if filter != "" {
				k := c.Of(catalog.Health(filter))
				if filter == db.StatusMaterialized {
					k = c.Materialized()
				}
				bar = views.Bar{Segs: []views.Seg{{Status: filter, N: k}, {Status: "other", N: bar.Total - k}}, Total: bar.Total}
			}
			g.addBucket(a, from, to, bar, cur, q)
		}
		return *g.Grid, nil
	}
	counts, err := h.Store.BucketCounts(ctx, a.ID, lo, hi, size)
	if err != nil {
		return views.Grid{}, err
	}
	for b, c := range counts {
		from := lo + int64(b)*size
		to := min(from+size-1, hi)
		full := db.Counts{}
		var stored int64
		for st, k := range c {
			full[st] = k
			stored += k
		}
		full[db.StatusMissing] = max(to-from+1-stored, 0)
		bar := barOf(full)
		if filter != "" {
			other := bar.Total - full[filter]
			bar = views.Bar{Segs: []views.Seg{{Status: filter, N: full[filter]}, {Status: "other", N: other}}, Total: bar.Total}
		}
		g.addBucket(a, from, to, bar, cur, q)
	}
	return *g.Grid, nil
}

// bucketGridBuilder collects buckets into a views.Grid.
type bucketGridBuilder struct{ *views.Grid }

// addBucket appends the bucket [from, to], merged into the previous one when
// both hold a single equal status (runs of equal status), and marks the
// buckets overlapping cur as current.
func (g bucketGridBuilder) addBucket(a assetCtx, from, to int64, bar views.Bar, cur [2]int64, q url.Values) {
	current := cur[0] <= to && cur[1] >= from
	if m := len(g.Buckets); m > 0 && single(g.Buckets[m-1].Bar) != "" && single(g.Buckets[m-1].Bar) == single(bar) && g.Buckets[m-1].Current == current {
		prev := &g.Buckets[m-1]
		prev.Span++
		prev.To = a.Space.Key(to)
		for i := range prev.Bar.Segs {
			prev.Bar.Segs[i].N += bar.Segs[i].N
		}
		prev.Bar.Total += bar.Total
		prev.Href = rangeHref(q, prev.From, prev.To)
		prev.Title = bucketTitle(prev.From, prev.To, prev.Bar)
		return
	}
	fk, tk := a.Space.Key(from), a.Space.Key(to)
	g.Buckets = append(g.Buckets, views.Bucket{From: fk, To: tk, Bar: bar, Span: 1, Current: current,
		Href: rangeHref(q, fk, tk), Title: bucketTitle(fk, tk, bar)})
}

// single returns the only status present in a bar, or "".
func single(b views.Bar) string {
	s := ""
	for _, seg := range b.Segs {
		if seg.N > 0 {
			if s != "" {
				return ""
			}
			s = seg.Status
		}
	}
	return s
}

func bucketTitle(from, to string, b views.Bar) string {
	var parts []string
	for _, s := range b.Segs {
		if s.N > 0 {
			label := strings.ToLower(views.StatusLabel(s.Status))
			if s.Status == db.StatusMaterialized && hasStale(b) {
				label = "fresh" // beside "stale", as the health bars' legend counts them
			} else if s.Status == views.SegStale {
				label = "stale"
			}
			parts = append(parts, views.Num(s.N)+" "+label)
		}
	}
	return fmt.Sprintf("%s: %s partition%s — %s", keySpan(from, to), views.Num(b.Total), plural(b.Total), strings.Join(parts, ", "))
}

// hasStale reports whether bar b splits materialized partitions into fresh
// and stale (a health bar).
func hasStale(b views.Bar) bool {
	for _, s := range b.Segs {
		if s.Status == views.SegStale {
			return true
		}
	}
	return false
}

// rangeHref is the current page's query with from and to replaced.
func rangeHref(q url.Values, from, to string) string {
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	v.Set("from", from)
	v.Set("to", to)
	return "?" + v.Encode()
}
