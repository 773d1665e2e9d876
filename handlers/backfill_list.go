package handlers

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// BackfillHref is a backfill page's path.
func BackfillHref(id string) string { return "/backfills/" + url.PathEscape(id) }

// backfillLink links to the backfill id, or is nil when there is none.
func backfillLink(id *string) *views.Link {
	if id == nil {
		return nil
	}
	return &views.Link{Label: *id, Href: BackfillHref(*id)}
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

func backfillRow(b db.Backfill, now time.Time, loc *time.Location) views.BackfillRow {
	title := b.Name()
	return views.BackfillRow{ID: b.ID, Href: BackfillHref(b.ID), Title: title, State: b.State,
		StateLabel: views.BackfillStateLabel(b.State, withFailures(b)), Assets: assetList(b),
		Progress: progressBar(b, runningParts(b)), Started: fmtStamp(loc, b.StartedAt),
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
	before, err := intParam("before", c.QueryParam("before"), 0, 0, "a backfill sequence number")
	if err != nil {
		return err
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
	recovered, err := h.recoveredBy(ctx, rows[:min(len(rows), BackfillPageSize)])
	if err != nil {
		return err
	}
	for i, b := range rows {
		if i == BackfillPageSize {
			q := maps.Clone(filter)
			q.Set("before", strconv.FormatInt(rows[i-1].Seq, 10))
			m.Next = "/backfills?" + q.Encode()
			break
		}
		r := backfillRow(b, now, zoneOf(ctx))
		if rc, ok := recovered[b.ID]; ok {
			r.Recovered = &views.Link{Label: rc.Name, Href: BackfillHref(rc.ID)}
		}
		m.Rows = append(m.Rows, r)
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
	bs, err := db.ActiveBackfills(ctx, h.Store.Reader())
	if err != nil {
		return nil, err
	}
	now := h.Now()
	out := make([]views.BackfillRow, 0, min(len(bs), 20))
	for i := len(bs) - 1; i >= 0 && len(out) < 20; i-- {
		out = append(out, backfillRow(bs[i], now, zoneOf(ctx)))
	}
	return out, nil
}
