package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// Page sizes and bounds of the backfill pages (they keep every page small at
// 10,000 chunks and a million partitions).
const (
	BackfillPageSize = 50
	ChunkPageSize    = 50
	ChunkTileLimit   = 1000 // chunks drawn one tile each; more are bucketed
	ChunkBuckets     = 120
	TimelineLimit    = 40
	chartBars        = 60
)

// pageEngine is the engine the pages steer backfills with.
func (h *Handler) pageEngine() (*jobs.Engine, error) {
	if h.Engine == nil {
		return nil, &UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the backfill engine is not running on this server"}
	}
	return h.Engine, nil
}

// actor is who the request acts as, for the audit log.
func actor(c echo.Context) string {
	if p := CurrentPrincipal(c); p != nil && p.Name != "" {
		return p.Name
	}
	return "anonymous"
}

// canOperate reports whether the request may launch and steer backfills.
func canOperate(c echo.Context) bool {
	p := CurrentPrincipal(c)
	return p != nil && p.Role >= RoleOperator
}

// BackfillHref is a backfill page's path.
func BackfillHref(id string) string { return "/backfills/" + url.PathEscape(id) }

// RunHref is a run page's path.
func RunHref(id string) string { return "/runs/" + url.PathEscape(id) }

func fmtTime(ms *int64) string {
	if ms == nil {
		return ""
	}
	return db.FromMillis(*ms).UTC().Format("2006-01-02 15:04:05 UTC")
}

func fmtDur(d time.Duration) string { return catalog.HumanDuration(d) }

func durBetween(from, to *int64, now time.Time) string {
	if from == nil {
		return ""
	}
	end := db.Millis(now)
	if to != nil {
		end = *to
	}
	return fmtDur(time.Duration(end-*from) * time.Millisecond)
}

func assetList(b db.Backfill) []string {
	var out []string
	_ = json.Unmarshal([]byte(b.Assets), &out)
	return out
}

// withFailures is non-zero when a chunk or partition of b failed (the API's
// paused_with_failures uses the same rule).
func withFailures(b db.Backfill) int64 { return b.RunsFailed + b.PartitionsFailed }

// failures is how many partitions failed or were skipped for a failed upstream.
func failures(b db.Backfill) int64 { return b.PartitionsFailed + b.PartitionsUpstreamFailed }

// progressBar lays a backfill's partitions out as succeeded / failed /
// running / pending — canceled instead of pending once the backfill is
// being canceled (notRunLabel).
func progressBar(b db.Backfill, runningParts int64) views.Bar {
	done, failed := b.PartitionsMaterialized, failures(b)
	running := max(min(runningParts, b.TotalPartitions-done-failed), 0)
	pending := max(b.TotalPartitions-done-failed-running, 0)
	notRun := db.StatusMissing
	if notRunLabel(b.State) == "canceled" {
		notRun = views.OutcomeCanceled
	}
	return views.Bar{Total: b.TotalPartitions, Segs: []views.Seg{
		{Status: db.StatusMaterialized, N: done}, {Status: db.StatusFailed, N: failed},
		{Status: db.StatusInProgress, N: running}, {Status: notRun, N: pending}}}
}

// runningParts estimates the partitions of running runs from the projection
// row (queued runs wait: they are not running).
func runningParts(b db.Backfill) int64 {
	return b.RunsRunning * b.ChunkSize
}

func backfillRow(b db.Backfill, now time.Time) views.BackfillRow {
	title := b.Title
	if title == "" {
		title = "Backfill " + b.ID
	}
	return views.BackfillRow{ID: b.ID, Href: BackfillHref(b.ID), Title: title, State: b.State,
		StateLabel: views.BackfillStateLabel(b.State, withFailures(b)), Assets: assetList(b),
		Progress: progressBar(b, runningParts(b)), Started: fmtTime(b.StartedAt),
		Duration: durBetween(b.StartedAt, b.FinishedAt, now), CreatedBy: b.CreatedBy}
}

// BackfillsList renders /backfills: state filter, newest first, cursor pages.
func (h *Handler) BackfillsList(c echo.Context) error {
	ctx := c.Request().Context()
	state := strings.ToUpper(strings.TrimSpace(c.QueryParam("state")))
	var states []string
	if state != "" {
		ok := false
		for _, s := range db.BackfillStates {
			ok = ok || s == state
		}
		if !ok {
			return BadRequest("state", "unknown state %q; use one of %s", state, strings.Join(db.BackfillStates, ", "))
		}
		states = []string{state}
	}
	var before int64
	if v := c.QueryParam("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return BadRequest("before", "before must be a backfill sequence number, got %q", v)
		}
		before = n
	}
	asset, err := h.assetFilter(c)
	if err != nil {
		return err
	}
	rows, err := h.Store.Backfills(ctx, states, asset, before, BackfillPageSize+1)
	if err != nil {
		return err
	}
	m := views.BackfillsPage{States: db.BackfillStates, State: state, Asset: asset, CanLaunch: canOperate(c)}
	for _, a := range h.Workspace().Workspace.Assets {
		m.Assets = append(m.Assets, a.Key)
	}
	filter := url.Values{}
	if state != "" {
		filter.Set("state", state)
	}
	if asset != "" {
		filter.Set("asset", asset)
	}
	now := h.Now()
	for i, b := range rows {
		if i == BackfillPageSize {
			q := maps.Clone(filter)
			q.Set("before", strconv.FormatInt(rows[i-1].Seq, 10))
			m.Next = "/backfills?" + q.Encode()
			break
		}
		m.Rows = append(m.Rows, backfillRow(b, now))
	}
	if before > 0 {
		m.First = "/backfills"
		if len(filter) > 0 {
			m.First += "?" + filter.Encode()
		}
	}
	// The table refreshes itself on every backfill change, with the same
	// filters and page (htmx asks for the rows alone).
	self := maps.Clone(filter)
	if before > 0 {
		self.Set("before", strconv.FormatInt(before, 10))
	}
	self.Set("fragment", "rows")
	m.LiveRows = "/backfills?" + self.Encode()
	if c.QueryParam("fragment") == "rows" {
		return render(c, http.StatusOK, views.BackfillListRows(m))
	}
	return render(c, http.StatusOK, views.BackfillsListPage(page(c, "Backfills", "backfills"), m))
}

// ActiveBackfillRows is the overview's list of active backfills.
func (h *Handler) ActiveBackfillRows(ctx context.Context) ([]views.BackfillRow, error) {
	bs, err := db.ActiveBackfills(ctx, h.Store.R)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	out := make([]views.BackfillRow, 0, min(len(bs), 20))
	for i := len(bs) - 1; i >= 0 && len(out) < 20; i-- {
		out = append(out, backfillRow(bs[i], now))
	}
	return out, nil
}

// loadDetail builds the backfill page's model.
func (h *Handler) loadDetail(c echo.Context, id string) (views.BackfillDetail, error) {
	return h.loadDetailParts(c, id, detailAll)
}

// Parts of the backfill page's model: each live fragment reads only what it
// renders (the summary neither the chunk table nor the timeline, the buttons
// none of the three).
const (
	detailSummary = 1 << iota // progress, counts, throughput, outcome grids
	detailChunks              // the chunk table
	detailEvents              // the timeline
	detailAll     = detailSummary | detailChunks | detailEvents
)

// loadDetailParts builds the header of the backfill page's model (title,
// selection, children, buttons) and the parts asked for.
func (h *Handler) loadDetailParts(c echo.Context, id string, parts int) (views.BackfillDetail, error) {
	ctx := c.Request().Context()
	b, err := h.Store.Backfill(ctx, id)
	if err != nil {
		return views.BackfillDetail{}, engineErr(err)
	}
	now := h.Now()
	d := views.BackfillDetail{ID: b.ID, Href: BackfillHref(b.ID), Title: b.Title, State: b.State, StateVersion: b.StateVersion,
		StateLabel: views.BackfillStateLabel(b.State, withFailures(b)), Selector: describeSelection(b), CreatedBy: b.CreatedBy,
		Created: fmtTime(&b.CreatedAt), Started: fmtTime(b.StartedAt), Finished: fmtTime(b.FinishedAt),
		Live: !db.BackfillTerminal(b.State), CSRF: page(c, "", "").CSRF}
	if d.Title == "" {
		d.Title = "Backfill " + b.ID
	}
	for _, a := range assetList(b) {
		d.Assets = append(d.Assets, views.Link{Label: a, Href: AssetHref(a)})
	}
	if b.ParentBackfillID != nil {
		d.Parent = &views.Link{Label: *b.ParentBackfillID, Href: BackfillHref(*b.ParentBackfillID)}
	}
	kids, err := h.Store.ChildBackfills(ctx, b.ID)
	if err != nil {
		return d, err
	}
	for _, k := range kids {
		d.Children = append(d.Children, views.Link{Label: k.ID + " (" + strings.ToLower(k.State) + ")", Href: BackfillHref(k.ID)})
	}
	if canOperate(c) {
		d.Actions = actionsFor(b, len(kids) > 0)
		// The same for every page showing the backfill with as many
		// children: a second tab's (or a resubmitted form's) press lands on
		// the child the first one launched instead of launching another.
		d.RetryRequestID = fmt.Sprintf("rr_page_%d", len(kids))
		if d.Relaunch, err = h.relaunchFor(ctx, b); err != nil {
			return d, err
		}
	}
	if parts&detailSummary != 0 {
		if err := h.detailSummary(ctx, &d, b, now); err != nil {
			return d, err
		}
	}
	if parts&detailChunks != 0 {
		if d.Chunks, err = h.chunkTable(c, b); err != nil {
			return d, err
		}
	}
	if parts&detailEvents != 0 {
		if d.Events, err = h.timeline(ctx, b.ID); err != nil {
			return d, err
		}
	}
	return d, nil
}

// detailSummary fills the live summary: progress, counts, throughput and
// the outcome grids.
func (h *Handler) detailSummary(ctx context.Context, d *views.BackfillDetail, b db.Backfill, now time.Time) error {
	// Finished runs are counted on the backfill (in the transactions that
	// finish them); only the active ones are read.
	states, err := h.Store.BackfillActiveRunStates(ctx, b.ID)
	if err != nil {
		return err
	}
	var running, queued int64
	for _, s := range states {
		switch s.State {
		case db.RunRunning:
			running += s.Partitions
		case db.RunQueued:
			queued += s.Partitions
		}
	}
	d.Progress = progressBar(b, running)
	d.PctDone = views.Pct(b.PartitionsMaterialized+failures(b), b.TotalPartitions)
	// Partitions of chunks planned but not running (waiting for a slot, a
	// lease or a retry's backoff) are queued, not running.
	queued = min(queued, d.Progress.Segs[3].N)
	d.Counts = []views.KV{
		{K: "succeeded", V: views.Num(b.PartitionsMaterialized)},
		{K: "failed", V: views.Num(b.PartitionsFailed)},
		{K: "upstream-failed", V: views.Num(b.PartitionsUpstreamFailed)},
		{K: "running", V: views.Num(d.Progress.Segs[2].N)},
	}
	if queued > 0 && !db.BackfillTerminal(b.State) {
		d.Counts = append(d.Counts, views.KV{K: "queued", V: views.Num(queued)})
	}
	chunks := views.Num(b.RunsSucceeded+b.RunsFailed+b.RunsCanceled) + " of " + views.Num(b.TotalChunks) + " finished"
	if notRunLabel(b.State) == "canceled" {
		// Chunks never planned will not run: canceled, as the API counts them.
		chunks = views.Num(b.RunsSucceeded+b.RunsFailed) + " of " + views.Num(b.TotalChunks) + " finished, " +
			views.Num(ToBackfillJSON(b).Counts["canceled"]) + " canceled"
	}
	d.Counts = append(d.Counts,
		views.KV{K: notRunLabel(b.State), V: views.Num(d.Progress.Segs[3].N - queued)},
		views.KV{K: "chunks", V: chunks})
	if err := h.throughput(ctx, d, b, now); err != nil {
		return err
	}
	d.Grids, err = h.outcomeGrids(ctx, b)
	return err
}

// notRunLabel names the partitions no run has finished: pending while the
// backfill may still run them; canceled once it never will.
func notRunLabel(state string) string {
	if state == db.BackfillCanceling || state == db.BackfillCanceled {
		return "canceled"
	}
	return "pending"
}

// actionsFor lists the buttons allowed in b's state (for an operator).
func actionsFor(b db.Backfill, hasChild bool) []views.Action {
	href := BackfillHref(b.ID)
	var out []views.Action
	switch b.State {
	case db.BackfillPending, db.BackfillRunning:
		out = append(out, views.Action{Name: jobs.ActPause, Label: "Pause", Href: href + "/pause"})
	case db.BackfillPaused:
		out = append(out, views.Action{Name: jobs.ActResume, Label: "Resume", Href: href + "/resume"})
	}
	switch b.State {
	case db.BackfillPending, db.BackfillRunning, db.BackfillPaused:
		out = append(out, views.Action{Name: jobs.ActCancel, Label: "Cancel", Href: href + "/cancel"})
	case db.BackfillCanceling:
		if !b.Terminate {
			// A graceful cancel waits for the running chunks; this ends them.
			out = append(out, views.Action{Name: "terminate", Label: "Terminate running chunks", Href: href + "/cancel"})
		}
	}
	if failures(b) > 0 && !hasChild && (db.BackfillTerminal(b.State) || b.State == db.BackfillPaused) {
		out = append(out, views.Action{Name: "retry-failed", Label: "Retry failed", Href: href + "/retry-failed"})
	}
	return out
}

// throughput fills rate, ETA and the chart from finished attempts.
func (h *Handler) throughput(ctx context.Context, d *views.BackfillDetail, b db.Backfill, now time.Time) error {
	d.Throughput, d.ETA = "—", "—"
	d.Chart = views.Chart{Empty: true, Width: 600, Height: 120, XLabel: "time", YLabel: "partitions finished"}
	if b.StartedAt == nil {
		switch {
		case b.State == db.BackfillCanceled:
			d.ETA = "canceled"
		case !db.BackfillTerminal(b.State):
			d.ETA = "not started"
		}
		return nil
	}
	end := db.Millis(now)
	if b.FinishedAt != nil {
		end = *b.FinishedAt
	}
	span := max(end-*b.StartedAt, 1)
	finished := b.PartitionsMaterialized + failures(b)
	rate := float64(finished) / (float64(span) / 1000) // partitions per second
	d.Throughput = catalog.HumanRate(rate, " partitions")
	remaining := b.TotalPartitions - finished
	var retryN, retryAt int64
	if b.State == db.BackfillRunning && b.RunsRunning == 0 && remaining > 0 {
		var err error
		if retryN, retryAt, err = h.Store.BackfillRetryWait(ctx, b.ID, db.Millis(now)); err != nil {
			return err
		}
	}
	switch {
	case b.State == db.BackfillCanceled:
		d.ETA = "canceled"
	case b.State == db.BackfillCanceling:
		d.ETA = "canceling"
	case db.BackfillTerminal(b.State):
		d.ETA = "finished"
	case b.State == db.BackfillPaused:
		d.ETA = "paused"
	case remaining <= 0:
		d.ETA = "finishing"
	case b.RunsRunning == 0 && retryN > 0:
		// Nothing runs: the backfill waits out a retry's backoff, and
		// a rate-based ETA would only grow meanwhile.
		retries := "1 retry"
		if retryN > 1 {
			retries = fmt.Sprintf("%d retries", retryN)
		}
		d.ETA = fmt.Sprintf("waiting for %s, the first at %s (in %s)", retries,
			db.FromMillis(retryAt).UTC().Format("15:04:05 UTC"), fmtDur((time.Duration(retryAt-db.Millis(now)) * time.Millisecond).Round(time.Second)))
		// Nothing changes until the retry starts, so no update would come
		// over the stream: the page refreshes the countdown itself.
		d.Countdown = true
	case rate > 0:
		d.ETA = fmtDur(time.Duration(float64(remaining)/rate*1000) * time.Millisecond)
	default:
		d.ETA = "unknown yet"
	}
	if b.State == db.BackfillRunning && b.RunsRunning == 0 && retryN == 0 && h.Engine != nil {
		// Nothing runs and no retry is due: say what the next chunk waits
		// for (a throttled pool sends nothing over the stream meanwhile, so
		// the page refreshes itself).
		w, err := h.Engine.NextChunkWait(ctx, b)
		if err != nil {
			return err
		}
		if w != nil {
			d.ETA = "unknown yet: " + w.Reason
			d.Countdown = true
		}
	}
	if w := storeWait(h.Store.WriteHealth()); w != nil && b.State == db.BackfillRunning {
		// Nothing it does can be recorded until the store writes again
		// (the page refreshes itself to see that).
		d.ETA = "unknown yet: " + w.Reason
		d.Countdown = true
	}
	width := max((span+chartBars-1)/chartBars, 1000)
	pts, err := h.Store.BackfillThroughput(ctx, b.ID, *b.StartedAt, width)
	if err != nil || len(pts) == 0 {
		return err
	}
	n := (span + width - 1) / width
	n = max(n, 1)
	var peak int64
	for _, p := range pts {
		peak = max(peak, p.Done+p.Failed)
	}
	if peak == 0 {
		return nil
	}
	c := &d.Chart
	c.Empty, c.Max = false, peak
	c.XLabel = fmt.Sprintf("per %s, since %s", fmtDur(time.Duration(width)*time.Millisecond), fmtTime(b.StartedAt))
	bw := float64(c.Width) / float64(n)
	for _, p := range pts {
		i := (p.At - *b.StartedAt) / width
		hgt := float64(p.Done+p.Failed) * float64(c.Height-4) / float64(peak)
		c.Points = append(c.Points, views.ChartPoint{
			X: ftoa(float64(i) * bw), W: ftoa(math.Max(bw-1, 1)), Y: ftoa(float64(c.Height) - hgt), H: ftoa(hgt),
			Title: fmt.Sprintf("%s: %d succeeded, %d failed", db.FromMillis(p.At).UTC().Format("15:04:05"), p.Done, p.Failed)})
	}
	return nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

var runStates = []string{db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled}

// outcomeGrids draws each asset's selection coloured by this backfill's
// outcome: one tile per selected partition (laid out like the asset page's
// grid, linking to its chunk's run) when the segment selects at most a grid's
// worth of partitions; else one tile per chunk (linking to its run) when few,
// buckets of chunks when many.
func (h *Handler) outcomeGrids(ctx context.Context, b db.Backfill) ([]views.ChunkGrid, error) {
	segs, err := db.Segments(ctx, h.Store.R, b.ID)
	if err != nil {
		return nil, err
	}
	var out []views.ChunkGrid
	for _, s := range segs {
		g := views.ChunkGrid{Asset: s.Asset, Partitions: s.Partitions, Chunks: s.Chunks}
		if g.Partition, err = h.partitionOutcomeGrid(ctx, b, s); err != nil {
			return nil, err
		}
		switch {
		case g.Partition != nil:
		case s.Chunks <= ChunkTileLimit:
			if g.Tiles, err = h.chunkTiles(ctx, b, s); err != nil {
				return nil, err
			}
		default:
			if g.Strip, g.Size, err = h.chunkStrip(ctx, b, s); err != nil {
				return nil, err
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// partitionOutcomeGrid draws segment s one tile per selected partition,
// coloured by what this backfill did to it, or returns nil when s selects
// more partitions than the asset's grid layout draws as tiles (TileLimit),
// or when the engine or the asset's declaration is not there to resolve its
// keys. It reads the segment's keys as the controller does (one read of its
// ranges or explicit keys), its chunk runs, their instances of those keys and
// the backfill's failures of the asset: four queries whatever the tile count.
func (h *Handler) partitionOutcomeGrid(ctx context.Context, b db.Backfill, s db.Segment) (*views.Grid, error) {
	if h.Engine == nil || s.Partitions <= 0 || s.Partitions > TileLimit || h.Workspace().Asset(s.Asset) == nil {
		return nil, nil
	}
	a, err := h.asset(ctx, s.Asset)
	if err != nil {
		return nil, err
	}
	l := layoutFor(a)
	if s.Partitions > l.maxTiles() {
		return nil, nil
	}
	keys, idx, err := h.Engine.SegmentKeys(ctx, b, s)
	if err != nil {
		return nil, err
	}
	runs, err := h.Store.ChunkRuns(ctx, b.ID, s.FirstChunk, s.FirstChunk+s.Chunks-1)
	if err != nil {
		return nil, err
	}
	byChunk := make(map[int64]*db.Run, len(runs))
	ids := make([]string, 0, len(runs))
	for i := range runs {
		byChunk[runs[i].Chunk] = &runs[i]
		ids = append(ids, runs[i].ID)
	}
	insts, err := h.Store.RunInstances(ctx, s.AssetID, ids, keys)
	if err != nil {
		return nil, err
	}
	built := make(map[runKey]instFold, len(insts))
	for _, in := range insts { // oldest first: the last one is the latest attempt
		k := runKey{in.RunID, in.Key}
		f := built[k]
		f.materialized = f.materialized || in.Status == db.StatusMaterialized
		f.last = in.Status
		built[k] = f
	}
	fails, err := h.Store.SegmentFailures(ctx, b.ID, s.AssetID)
	if err != nil {
		return nil, err
	}
	failed := make(map[runKey]string, len(fails))
	for _, f := range fails {
		failed[runKey{f.RunID, f.Key}] = f.Reason
	}
	tiles := make([]views.Tile, len(keys))
	ordered := true
	for p, key := range keys {
		ch := s.FirstChunk + int64(p)/b.ChunkSize
		r := byChunk[ch]
		t := views.Tile{Key: key, Href: PartitionHref(s.Asset, key)}
		if r == nil {
			t.Status = partitionOutcome(b, nil, instFold{}, "")
			t.Title = fmt.Sprintf("%s · %s · chunk %d · not planned yet", key, views.OutcomeLabel(t.Status), ch)
		} else {
			k := runKey{r.ID, key}
			t.Status = partitionOutcome(b, r, built[k], failed[k])
			t.Href = RunHref(r.ID)
			t.Title = fmt.Sprintf("%s · %s · chunk %d · run %s", key, views.OutcomeLabel(t.Status), ch, r.ID)
		}
		tiles[p] = t
		ordered = ordered && idx[p] >= 0 && (p == 0 || idx[p] > idx[p-1])
	}
	if !ordered && s.Explicit { // an explicit list is kept in the order given: draw it by index
		ordered = true
		order := make([]int, len(keys))
		for j := range order {
			order[j] = j
			ordered = ordered && idx[j] >= 0
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(idx[x], idx[y]) })
		t2, i2 := make([]views.Tile, len(order)), make([]int64, len(order))
		for j, o := range order {
			t2[j], i2[j] = tiles[o], idx[o]
		}
		tiles, idx = t2, i2
	}
	if !ordered { // keys no longer in the asset's space cannot be placed on a calendar
		l = gridLayout{mode: "list"}
	}
	g := l.layTiles(a, idx, tiles)
	g.TileTestID = "outcome-tile"
	return &g, nil
}

// runKey is one partition of one run.
type runKey struct{ run, key string }

// instFold sums up a run's instances of one partition: whether one attempt
// materialized it (the run's checkpoint) and the latest attempt's status.
type instFold struct {
	materialized bool
	last         string
}

// partitionOutcome is what backfill b did to one partition of chunk run r
// (nil: the chunk is not planned yet), from the run's instances of the
// partition and the backfill's failure record of it (reason, "" when none).
func partitionOutcome(b db.Backfill, r *db.Run, in instFold, failure string) string {
	switch {
	case r == nil && (b.State == db.BackfillCanceled || b.State == db.BackfillCanceling):
		return views.OutcomeCanceled // will never be planned
	case r == nil:
		return views.OutcomePending
	case failure == "upstream_failed":
		return views.OutcomeUpstreamFailed
	case in.materialized:
		return views.OutcomeMaterialized
	case r.State == db.RunRunning && in.last == db.StatusInProgress:
		return views.OutcomeRunning
	case r.State == db.RunRunning || r.State == db.RunQueued:
		return views.OutcomeQueued // waiting for a slot, a lease or a retry
	case failure != "" || in.last == db.StatusFailed:
		return views.OutcomeFailed
	case in.last == db.AttemptCanceled || in.last == db.AttemptInterrupted:
		return views.OutcomeCanceled
	}
	switch r.State { // no instance of the partition: the run's outcome is the partition's
	case db.RunSucceeded:
		return views.OutcomeMaterialized
	case db.RunFailed:
		return views.OutcomeFailed
	}
	return views.OutcomeCanceled
}

// chunkTiles draws segment s one tile per chunk, linking to its run.
func (h *Handler) chunkTiles(ctx context.Context, b db.Backfill, s db.Segment) ([]views.Tile, error) {
	lo, hi := s.FirstChunk, s.FirstChunk+s.Chunks-1
	runs, err := h.Store.ChunkRuns(ctx, b.ID, lo, hi)
	if err != nil {
		return nil, err
	}
	tiles := make([]views.Tile, 0, s.Chunks)
	j := 0
	for ch := lo; ch <= hi; ch++ {
		t := views.Tile{Status: "pending", Title: fmt.Sprintf("chunk %d · not planned yet", ch)}
		if b.State == db.BackfillCanceling || b.State == db.BackfillCanceled {
			t = views.Tile{Status: db.RunCanceled, Title: fmt.Sprintf("chunk %d · canceled before it was planned", ch)}
		}
		if j < len(runs) && runs[j].Chunk == ch {
			r := runs[j]
			j++
			t.Status, t.Href = r.State, RunHref(r.ID)
			t.Title = fmt.Sprintf("chunk %d · %s … %s · %s", ch, r.FirstKey, r.LastKey, r.State)
		}
		tiles = append(tiles, t)
	}
	return tiles, nil
}

// chunkStrip draws segment s as about ChunkBuckets buckets of chunks counted
// by run state; size is the chunks per bucket.
func (h *Handler) chunkStrip(ctx context.Context, b db.Backfill, s db.Segment) (strip []views.Bucket, size int64, err error) {
	lo, hi := s.FirstChunk, s.FirstChunk+s.Chunks-1
	size = (s.Chunks + ChunkBuckets - 1) / ChunkBuckets
	counts, err := h.Store.BackfillChunkBuckets(ctx, b.ID, lo, hi, size)
	if err != nil {
		return nil, 0, err
	}
	nb := (s.Chunks + size - 1) / size
	bars := make([]map[string]int64, nb)
	for i := range bars {
		bars[i] = map[string]int64{}
	}
	for _, c := range counts {
		if c.Bucket >= 0 && c.Bucket < nb {
			bars[c.Bucket][c.State] += c.Runs
		}
	}
	for i := range nb {
		from := lo + i*size
		to := min(from+size-1, hi)
		m := bars[i]
		var planned int64
		for _, n := range m {
			planned += n
		}
		bar := views.Bar{Total: to - from + 1, Segs: []views.Seg{
			{Status: db.StatusMaterialized, N: m[db.RunSucceeded]}, {Status: db.StatusFailed, N: m[db.RunFailed]},
			{Status: db.StatusInProgress, N: m[db.RunQueued] + m[db.RunRunning]},
			{Status: "other", N: m[db.RunCanceled]}, {Status: db.StatusMissing, N: max(to-from+1-planned, 0)}}}
		strip = append(strip, views.Bucket{From: strconv.FormatInt(from, 10), To: strconv.FormatInt(to, 10), Bar: bar, Span: 1,
			Href:  BackfillHref(b.ID) + "?after=" + strconv.FormatInt(from-1, 10) + "#bf-chunks",
			Title: fmt.Sprintf("chunks %d–%d: %d succeeded, %d failed, %d running, %d not run", from, to, m[db.RunSucceeded], m[db.RunFailed], m[db.RunQueued]+m[db.RunRunning], bar.Segs[4].N+m[db.RunCanceled])})
	}
	return strip, size, nil
}

// chunkTable is one page of the chunk table, from the request's query.
func (h *Handler) chunkTable(c echo.Context, b db.Backfill) (views.ChunkTable, error) {
	ctx := c.Request().Context()
	state := strings.ToLower(strings.TrimSpace(c.QueryParam("chunk_state")))
	var states []string
	if state != "" {
		ok := false
		for _, s := range runStates {
			ok = ok || s == state
		}
		if !ok {
			return views.ChunkTable{}, BadRequest("chunk_state", "unknown chunk state %q; use one of %s", state, strings.Join(runStates, ", "))
		}
		states = []string{state}
	}
	after := int64(-1)
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return views.ChunkTable{}, BadRequest("after", "after must be a chunk number, got %q", v)
		}
		after = n
	}
	runs, err := h.Store.Runs(ctx, b.ID, states, after, ChunkPageSize+1)
	if err != nil {
		return views.ChunkTable{}, err
	}
	planned, err := h.Store.BackfillCountRuns(ctx, b.ID, nil)
	if err != nil {
		return views.ChunkTable{}, err
	}
	// Interrupted attempts (a crash, a restart) do not count against the
	// asset's max_attempts: the table says so where a run has some.
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	interrupted, err := h.Store.InterruptedAttempts(ctx, ids)
	if err != nil {
		return views.ChunkTable{}, err
	}
	var waits map[string]*jobs.RunWait
	if h.Engine != nil {
		if waits, err = h.Engine.WaitReasons(ctx, b, runs[:min(len(runs), ChunkPageSize)]); err != nil {
			return views.ChunkTable{}, err
		}
	}
	href := BackfillHref(b.ID)
	q := url.Values{}
	if state != "" {
		q.Set("chunk_state", state)
	}
	base := url.Values{}
	for k, v := range q {
		base[k] = v
	}
	if after >= 0 {
		base.Set("after", strconv.FormatInt(after, 10))
	}
	t := views.ChunkTable{State: state, States: runStates, Planned: planned, Total: b.TotalChunks, Base: href + "/chunks?" + base.Encode()}
	spaces := map[string]*assetCtx{}
	for i, r := range runs {
		if i == ChunkPageSize {
			q.Set("after", strconv.FormatInt(runs[i-1].Chunk, 10))
			t.Next = href + "?" + q.Encode() + "#bf-chunks"
			break
		}
		row := views.ChunkRow{Chunk: r.Chunk, RunID: r.ID, RunHref: RunHref(r.ID), Asset: r.Asset, State: r.State,
			Partitions: r.Partitions, Materialized: r.Materialized, Failed: r.Failed, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
			Duration: durBetween(r.StartedAt, r.FinishedAt, h.Now()), Interrupted: interrupted[r.ID]}
		if r.StartedAt != nil && r.FinishedAt == nil {
			// Not finished: when it started, which stays true between the
			// table's updates (a duration so far froze until the next).
			row.Duration = "since " + db.FromMillis(*r.StartedAt).UTC().Format("15:04:05 UTC")
		}
		row.Keys = h.chunkKeysText(ctx, r.Asset, r.FirstKey, r.LastKey, r.Partitions, spaces)
		if r.Error != nil {
			row.Error = truncateText(*r.Error, 200)
		}
		row.Wait, row.WaitHref = waitText(waits[r.ID])
		if b.State == db.BackfillRunning && r.State == db.RunQueued && r.NotBefore != nil && *r.NotBefore > db.Millis(h.Now()) {
			t.Countdown = true // its "in …" counts down
		}
		t.Rows = append(t.Rows, row)
	}
	if after >= 0 {
		q.Del("after")
		t.First = href + "?" + q.Encode() + "#bf-chunks"
	}
	return t, nil
}

// waitText is why a queued run waits, and the link to the run it waits for.
func waitText(w *jobs.RunWait) (reason, href string) {
	if w == nil {
		return "", ""
	}
	if w.HolderRunID != "" {
		href = RunHref(w.HolderRunID)
	}
	return w.Reason, href
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// timeline renders a backfill's events, newest first.
func (h *Handler) timeline(ctx context.Context, id string) ([]views.EventRow, error) {
	evs, err := h.Store.EventHeadsBySubject(ctx, "backfill:"+id, TimelineLimit)
	if err != nil {
		return nil, err
	}
	texts, err := h.eventTexts.summarize(ctx, h.Store, evs)
	if err != nil {
		return nil, err
	}
	out := make([]views.EventRow, 0, len(evs))
	for i, e := range evs {
		out = append(out, views.EventRow{At: e.Time().UTC().Format("2006-01-02 15:04:05"), Type: e.Type, Actor: e.Actor, Text: texts[i]})
	}
	return out, nil
}

func eventText(e db.Event) string {
	switch e.Type {
	case db.EvBackfillCreated:
		var p struct {
			Backfill db.Backfill `json:"backfill"`
		}
		_ = json.Unmarshal([]byte(e.Payload), &p)
		return fmt.Sprintf("Created: %s in %s", countOf(int(p.Backfill.TotalPartitions), "partition"), countOf(int(p.Backfill.TotalChunks), "chunk"))
	case db.EvBackfillState:
		var p db.BackfillStateChanged
		_ = json.Unmarshal([]byte(e.Payload), &p)
		s := fmt.Sprintf("%s → %s", p.From, p.To)
		if p.Terminate {
			s += " (terminate running)"
		}
		if p.Reason != "" {
			s += " — " + p.Reason
		}
		if n := failedCount(p.Failures); n > 0 {
			s += fmt.Sprintf("; %s that waited for a retry count as failed", countOf(n, "partition"))
		}
		return s
	case db.EvRunsPlanned:
		var p struct {
			NextChunk int64 `json:"next_chunk"`
			Runs      []struct {
				Chunk int64 `json:"chunk"`
			} `json:"runs"`
		}
		_ = json.Unmarshal([]byte(e.Payload), &p)
		if len(p.Runs) == 1 {
			return fmt.Sprintf("Chunk %d planned", p.Runs[0].Chunk)
		}
		if len(p.Runs) > 1 {
			return fmt.Sprintf("%d chunks planned (%d–%d)", len(p.Runs), p.Runs[0].Chunk, p.Runs[len(p.Runs)-1].Chunk)
		}
		return "Chunks planned"
	case db.EvAttemptsStarted:
		var p db.AttemptsStarted
		_ = json.Unmarshal([]byte(e.Payload), &p)
		parts := 0
		for _, a := range p.Attempts {
			parts += len(a.Parts)
		}
		if len(p.Attempts) == 1 && p.Attempts[0].Attempt > 1 {
			return fmt.Sprintf("Attempt %d of %s started (%s)", p.Attempts[0].Attempt, p.Attempts[0].RunID, countOf(parts, "partition"))
		}
		return fmt.Sprintf("%s started (%s)", countOf(len(p.Attempts), "attempt"), countOf(parts, "partition"))
	case db.EvAttemptsFinished:
		var p db.AttemptsFinished
		_ = json.Unmarshal([]byte(e.Payload), &p)
		return attemptsFinishedText(p)
	}
	return e.Type
}

// attemptsFinishedText says how a batch of attempts ended: counts per
// outcome, retries queued, and the first error.
func attemptsFinishedText(p db.AttemptsFinished) string {
	byState := map[string]int{}
	var order []string
	retries, firstErr := 0, ""
	for _, a := range p.Attempts {
		outcome := a.State
		if a.State == db.AttemptSucceeded && a.RunState == db.RunFailed {
			// It built what it ran, but partitions of a failed upstream were
			// skipped, so its chunk failed.
			outcome = "succeeded with skipped partitions (chunk failed)"
		}
		if byState[outcome] == 0 {
			order = append(order, outcome)
		}
		byState[outcome]++
		if a.RunState == db.RunQueued {
			retries++
		}
		if firstErr == "" && a.Error != "" {
			firstErr = a.Error
		}
	}
	var outcomes []string
	for _, s := range order {
		outcomes = append(outcomes, fmt.Sprintf("%d %s", byState[s], s))
	}
	s := fmt.Sprintf("%s finished: %s", countOf(len(p.Attempts), "attempt"), strings.Join(outcomes, ", "))
	if retries > 0 {
		s += fmt.Sprintf("; %s queued", countOf(retries, "retry"))
	}
	if firstErr != "" {
		if r := []rune(firstErr); len(r) > 120 {
			firstErr = string(r[:120]) + "…"
		}
		s += " — " + firstErr
	}
	return s
}

// countOf writes "1 attempt", "3 attempts", "2 retries".
func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return views.Num(int64(n)) + " " + strings.TrimSuffix(word, "y") + "ies"
	}
	return views.Num(int64(n)) + " " + word + "s"
}

// BackfillShow renders /backfills/{id}.
func (h *Handler) BackfillShow(c echo.Context) error {
	d, err := h.loadDetail(c, c.Param("id"))
	if err != nil {
		return err
	}
	if c.QueryParam("live") == "0" { // a static page: no stream, plain links only
		d.Live = false
	}
	return render(c, http.StatusOK, views.BackfillDetailPage(page(c, d.Title, "backfills"), d))
}

// BackfillSummaryPartial renders the live summary (htmx).
func (h *Handler) BackfillSummaryPartial(c echo.Context) error {
	d, err := h.loadDetailParts(c, c.Param("id"), detailSummary)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BackfillSummary(d))
}

// BackfillChunksPartial renders one page of the chunk table (htmx).
func (h *Handler) BackfillChunksPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	t, err := h.chunkTable(c, b)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ChunkTablePartial(BackfillHref(b.ID), t, !db.BackfillTerminal(b.State)))
}

// BackfillGridPartial renders the outcome grid alone (bench and htmx).
func (h *Handler) BackfillGridPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	gs, err := h.outcomeGrids(c.Request().Context(), b)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(http.StatusOK)
	for _, g := range gs {
		if err := views.ChunkGridView(g).Render(c.Request().Context(), c.Response().Writer); err != nil {
			return err
		}
	}
	return nil
}

// BackfillEventsPartial renders the timeline (htmx).
func (h *Handler) BackfillEventsPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	evs, err := h.timeline(c.Request().Context(), b.ID)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.Timeline(BackfillHref(b.ID), evs, !db.BackfillTerminal(b.State)))
}

// BackfillAction handles the Pause, Resume, Cancel and Retry-failed buttons.
// A stale expected_state_version re-renders the page with a conflict message.
func (h *Handler) BackfillAction(c echo.Context) error {
	eng, err := h.pageEngine()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, action := c.Param("id"), c.Param("action")
	var expected int64
	if v := c.FormValue("expected_state_version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return BadRequest("expected_state_version", "expected_state_version must be a positive number, got %q", v)
		}
		expected = n
	}
	switch action {
	case jobs.ActPause, jobs.ActResume, jobs.ActCancel:
		_, err = eng.Transition(ctx, id, action, expected, c.FormValue("terminate") != "", actor(c))
	case "retry-failed":
		var cr jobs.Created
		cr, err = eng.RetryFailed(ctx, id, jobs.RetryOptions{RequestID: c.FormValue("retry_request_id"), ExpectedStateVersion: expected}, actor(c))
		if err == nil {
			return c.Redirect(http.StatusSeeOther, BackfillHref(cr.Backfill.ID))
		}
	default:
		return NotFound("no backfill action %q", action)
	}
	if err != nil {
		uerr := engineErr(err)
		var ue *UserError
		if !errors.As(uerr, &ue) || ue.Status != http.StatusConflict {
			return uerr
		}
		d, derr := h.loadDetail(c, id)
		if derr != nil {
			return derr
		}
		if ue.Field == "expected_state_version" {
			// The engine's message says how an API client catches up; the
			// page has done so already.
			d.Message = fmt.Sprintf("Someone changed this backfill while you were looking at it: it is now %s. The page has been reloaded — check the state and try again.", views.BackfillStateLabel(d.State, 0))
		} else {
			d.Message = "Not done: " + PageMessage(ue.Message) + ". The page has been reloaded."
		}
		return render(c, http.StatusConflict, views.BackfillDetailPage(page(c, d.Title, "backfills"), d))
	}
	return c.Redirect(http.StatusSeeOther, BackfillHref(id))
}

// BackfillActionsPartial re-renders the buttons when the backfill's
// state_version differs from v; 204 (htmx keeps the buttons) otherwise.
func (h *Handler) BackfillActionsPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	if v := c.QueryParam("v"); v != "" && v == strconv.FormatInt(b.StateVersion, 10) {
		return c.NoContent(http.StatusNoContent)
	}
	d, err := h.loadDetailParts(c, b.ID, 0)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BackfillActionsLive(d))
}

// describeSelection words a backfill's selector for people: "range A … B",
// "missing, failed within A … B, region = eu", "explicit list of 3 keys".
func describeSelection(b db.Backfill) string {
	parent := "its parent"
	if b.ParentBackfillID != nil {
		parent = *b.ParentBackfillID
	}
	return describeSelectorOf(b.Selector, parent)
}

// describeSelectorOf words a stored selector; parent names the backfill a
// retry selector takes its failed partitions from.
func describeSelectorOf(stored, parent string) string {
	var sel struct {
		Type       string              `json:"type"`
		Start      string              `json:"start"`
		End        string              `json:"end"`
		Statuses   []string            `json:"statuses"`
		Dimensions map[string][]string `json:"dimensions"`
		Count      int64               `json:"count"`
		Keys       []string            `json:"keys"`
	}
	if err := json.Unmarshal([]byte(stored), &sel); err != nil {
		return stored
	}
	within := ""
	switch {
	case sel.Start != "" && sel.End != "":
		within = sel.Start + " … " + sel.End
	case sel.Start != "":
		within = "from " + sel.Start
	case sel.End != "":
		within = "up to " + sel.End
	}
	var out string
	switch sel.Type {
	case "range":
		out = "range " + within
		if within == "" {
			out = "every partition"
		}
	case "explicit":
		n := sel.Count
		if n == 0 {
			n = int64(len(sel.Keys))
		}
		out = fmt.Sprintf("explicit list of %s keys", views.Num(n))
	case "retry":
		out = "the failed and upstream-failed partitions of " + parent
	case "filter":
		out = "only " + strings.Join(sel.Statuses, ", ")
		if len(sel.Statuses) == 0 {
			out = "every partition"
		}
		if within != "" {
			out += " within " + within
		}
	default:
		return stored
	}
	names := make([]string, 0, len(sel.Dimensions))
	for name := range sel.Dimensions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out += ", " + name + " = " + strings.Join(sel.Dimensions[name], " or ")
	}
	return out
}

func failedCount(rfs []db.RunFailures) int {
	n := 0
	for _, rf := range rfs {
		n += len(rf.Parts)
	}
	return n
}
