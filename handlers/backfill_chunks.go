package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// RunHref is a run page's path.
func RunHref(id string) string { return "/runs/" + url.PathEscape(id) }

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
	after, err := intParam("after", c.QueryParam("after"), -1, -1, "a chunk number")
	if err != nil {
		return views.ChunkTable{}, err
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
			row.Duration = "since " + fmtClock(zoneOf(ctx), db.FromMillis(*r.StartedAt))
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
