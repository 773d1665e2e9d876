package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
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

// actor is who the request acts as, for the audit log.
func actor(c echo.Context) string {
	if p := CurrentPrincipal(c); p != nil && p.Name != "" {
		return p.Name
	}
	return "anonymous"
}

// fmtStamp is fmtTime of a stored time ("" for none).
func fmtStamp(loc *time.Location, ms *int64) string {
	if ms == nil {
		return ""
	}
	return fmtTime(loc, db.FromMillis(*ms))
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
	now, loc := h.Now(), zoneOf(ctx)
	d := views.BackfillDetail{ID: b.ID, Href: BackfillHref(b.ID), Title: b.Title, State: b.State, StateVersion: b.StateVersion,
		StateLabel: views.BackfillStateLabel(b.State, withFailures(b)), Selector: describeSelection(b), CreatedBy: b.CreatedBy,
		Created: fmtStamp(loc, &b.CreatedAt), Started: fmtStamp(loc, b.StartedAt), Finished: fmtStamp(loc, b.FinishedAt),
		Live: !db.BackfillTerminal(b.State), CSRF: page(c, "", "").CSRF}
	d.Title = b.Name()
	for _, a := range assetList(b) {
		d.Assets = append(d.Assets, views.Link{Label: a, Href: AssetHref(a)})
	}
	if b.ParentBackfillID != nil {
		// Named by its name, not its id (its page shows the id).
		label := *b.ParentBackfillID
		if p, err := h.Store.Backfill(ctx, *b.ParentBackfillID); err == nil {
			label = p.Name()
		} else if !errors.Is(err, db.ErrNotFound) {
			return d, err
		}
		d.Parent = &views.Link{Label: label, Href: BackfillHref(*b.ParentBackfillID)}
		if strings.HasPrefix(d.Selector, retrySelectionText) { // names the parent by its name, as Retry of does
			d.Selector = retrySelectionText + label
		}
	}
	kids, err := h.Store.ChildBackfills(ctx, b.ID)
	if err != nil {
		return d, err
	}
	recovered, err := h.recoveredBy(ctx, []db.Backfill{b})
	if err != nil {
		return d, err
	}
	if rc, ok := recovered[b.ID]; ok {
		d.Recovered = &views.Link{Label: rc.Name, Href: BackfillHref(rc.ID)}
	}
	for _, k := range kids {
		d.Children = append(d.Children, views.Link{Label: k.Name() + " (" + strings.ToLower(k.State) + ")", Href: BackfillHref(k.ID)})
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
	d.Grids, err = h.sharedOutcomeGrids(ctx, b)
	return err
}

// sharedOutcomeGrids is outcomeGrids shared by the backfill's viewers (the
// page and its live summary, refreshed on every update) while its row is
// unchanged, for gridsLag at most: the transactions that change its runs
// change its counters too, so viewers arriving between two controller
// steps of a running backfill share one reading of its runs.
func (h *Handler) sharedOutcomeGrids(ctx context.Context, b db.Backfill) ([]views.ChunkGrid, error) {
	row, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return h.grids.get(ctx, gridsKey{string(row), h.Workspace()}, func() ([]views.ChunkGrid, error) { return h.outcomeGrids(ctx, b) })
}

// gridsKey is what shared outcome grids are for: the backfill's row (as
// JSON) and the workspace that declares its assets.
type gridsKey struct {
	row string
	ws  *Workspace
}

// gridsLag bounds how long outcome grids are shared (what the engine
// knows, a missing asset's declaration, may change without the row).
const gridsLag = 250 * time.Millisecond

// notRunLabel names the partitions no run has finished: pending while the
// backfill may still run them; canceled once it never will.
func notRunLabel(state string) string {
	if state == db.BackfillCanceling || state == db.BackfillCanceled {
		return "canceled"
	}
	return "pending"
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
	if d.Chunks.Planned > GanttBarsMax {
		// Many chunks: the page comes first, the timeline (columns over
		// thousands of attempts) right after it (backfill_gantt.go).
		d.Gantt = views.Gantt{Href: BackfillHref(d.ID) + "/gantt", Live: d.Live, Lazy: true}
	} else if d.Gantt, err = h.ganttOf(c.Request().Context(), d.ID, d.Live, h.Now()); err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BackfillDetailPage(page(c, d.Title, "backfills"), d))
}

// BackfillSummaryPartial renders the live summary (htmx).
func (h *Handler) BackfillSummaryPartial(c echo.Context) error {
	d, err := h.loadDetailParts(c, c.Param("id"), detailSummary)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BackfillSummaryUpdate(d))
}
