package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// The runs list (/runs and GET /api/v1/runs): the chunk runs of every
// backfill, manual or launched by a schedule or sensor, newest first,
// filtered by asset, state, backfill and the time they were queued, a page
// at a time from the last row of the page before (db.RunList).

// RunStates are the states of a chunk run, in the order a run goes through
// them.
var RunStates = []string{db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled}

// RunsPageSize is how many runs a /runs page shows; the API's ?limit= of
// GET /api/v1/runs is DefaultRunsPageLimit unless given, at most
// MaxRunsPageLimit.
const (
	RunsPageSize         = 50
	DefaultRunsPageLimit = 50
	MaxRunsPageLimit     = 500
)

// runsTimeHelp is how the 400 of a bad from or to says to write a time.
const runsTimeHelp = `use RFC 3339 like 2025-01-15T12:00:00Z, "2025-01-15 12:00" or 2025-01-15T12:00 (UTC), a date, or Unix milliseconds`

// runFilter reads the filters of the runs list: ?asset= (a declared
// asset), ?state= (run states, comma-separated), ?backfill= (a backfill
// id), ?from= and ?to= (the time the run was queued, from inclusive, to
// exclusive) and ?cursor=. A bad one is a 400 naming the parameter and
// saying what it takes.
func (h *Handler) runFilter(c echo.Context) (db.RunFilter, error) {
	var f db.RunFilter
	var err error
	if f.Asset, err = h.assetFilter(c); err != nil {
		return f, err
	}
	if f.States, err = stateParam(c, "state", "run state", RunStates, strings.ToLower); err != nil {
		return f, err
	}
	if id := strings.TrimSpace(c.QueryParam("backfill")); id != "" {
		if _, err := h.Store.Backfill(c.Request().Context(), id); errors.Is(err, db.ErrNotFound) {
			return f, BadRequest("backfill", "no backfill %q; use a backfill id as /backfills lists them (bf_…), or leave backfill out for the runs of every backfill", id)
		} else if err != nil {
			return f, err
		}
		f.BackfillID = id
	}
	from, err := runsTime(c, "from")
	if err != nil {
		return f, err
	}
	to, err := runsTime(c, "to")
	if err != nil {
		return f, err
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return f, BadRequest("to", "to (%s) must be after from (%s): the list shows runs queued at or after from and before to", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if !from.IsZero() {
		f.From = db.Millis(from)
	}
	if !to.IsZero() {
		f.To = db.Millis(to)
	}
	if v := c.QueryParam("cursor"); v != "" {
		at, id, err := decodeAtCursor(v, "run")
		if err != nil || id == "" {
			return f, badCursor(v)
		}
		f.Before = db.RunPos{CreatedAt: at, ID: id}
	}
	return f, nil
}

// runsTime reads the time parameter name of the runs list (zero when left
// out).
func runsTime(c echo.Context, name string) (time.Time, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return time.Time{}, nil
	}
	t, err := parseAt(v)
	if err != nil {
		return t, BadRequest(name, "%s must be a time, got %q; %s", name, v, runsTimeHelp)
	}
	return t, nil
}

// runCursor is the cursor of the runs after r.
func runCursor(r db.ListedRun) string { return encodeAtCursor("run", r.CreatedAt, r.ID) }

// runDurationMs is how long r has run: to its end, or until now while it
// runs (nil before it started).
func runDurationMs(r db.Run, now time.Time) *int64 {
	if r.StartedAt == nil {
		return nil
	}
	end := db.Millis(now)
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	d := max(end-*r.StartedAt, 0)
	return &d
}

// runKeys says which partitions a run builds: its first and last key.
func runKeys(r db.Run) string {
	if r.FirstKey == r.LastKey || r.LastKey == "" {
		return r.FirstKey
	}
	return r.FirstKey + " … " + r.LastKey
}

// runsBackfillChoices is how many of the newest backfills /runs offers to
// pick from by title.
const runsBackfillChoices = 100

// RunsList renders /runs.
func (h *Handler) RunsList(c echo.Context) error {
	m := views.RunsPage{States: RunStates, Asset: c.QueryParam("asset"), State: c.QueryParam("state"),
		Backfill: c.QueryParam("backfill"), From: c.QueryParam("from"), To: c.QueryParam("to")}
	for _, a := range h.Workspace().Workspace.Assets {
		m.Assets = append(m.Assets, a.Key)
	}
	// The newest backfills, to pick one by its title.
	recent, err := h.Store.Backfills(c.Request().Context(), nil, "", 0, runsBackfillChoices)
	if err != nil {
		return err
	}
	for _, b := range recent {
		m.Backfills = append(m.Backfills, views.Link{Label: b.Name(), Href: b.ID})
	}
	f, err := h.runFilter(c)
	if err != nil {
		var ue *UserError
		if !errors.As(err, &ue) {
			return err
		}
		// The form stays, with what is wrong next to it.
		m.Error, m.ErrorField = ue.Message, ue.Field
		if ue.Page != "" {
			m.Error = ue.Page
		}
		return render(c, ue.Status, views.RunsListPage(page(c, "Runs", "runs"), m))
	}
	rows, err := h.Store.RunList(c.Request().Context(), f, RunsPageSize+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, RunsPageSize, runCursor)
	filter := url.Values{}
	for _, k := range []string{"asset", "state", "backfill", "from", "to"} {
		if v := strings.TrimSpace(c.QueryParam(k)); v != "" {
			filter.Set(k, v)
		}
	}
	m.Filtered = len(filter) > 0
	if next != "" {
		q := url.Values{}
		for k, v := range filter {
			q[k] = v
		}
		q.Set("cursor", next)
		m.Next = "/runs?" + q.Encode()
	}
	if c.QueryParam("cursor") != "" {
		m.First = "/runs"
		if len(filter) > 0 {
			m.First += "?" + filter.Encode()
		}
	}
	now, loc := h.Now(), zoneOfC(c)
	for _, r := range rows {
		row := views.RunRow{ID: r.ID, Href: RunHref(r.ID), Asset: r.Asset, AssetHref: AssetHref(r.Asset), Chunk: r.Chunk,
			Keys: runKeys(r.Run), Partitions: r.Partitions, State: r.State, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
			Queued: fmtStamp(loc, &r.CreatedAt), Started: fmtStamp(loc, r.StartedAt), Duration: durBetween(r.StartedAt, r.FinishedAt, now),
			Backfill: r.BackfillTitle, BackfillHref: BackfillHref(r.BackfillID), LaunchedBy: r.BackfillCreatedBy, Error: deref(r.Error)}
		if row.Backfill == "" {
			row.Backfill = "Backfill " + r.BackfillID
		}
		m.Rows = append(m.Rows, row)
	}
	return render(c, http.StatusOK, views.RunsListPage(page(c, "Runs", "runs"), m))
}

// ListedRunJSON is a run of GET /api/v1/runs: the chunk run as
// GET /api/v1/backfills/{id}/chunks lists it, with its backfill's title,
// who launched that backfill and how long the run has run.
type ListedRunJSON struct {
	ChunkJSON
	BackfillTitle string `json:"backfill_title"`
	LaunchedBy    string `json:"launched_by"`
	DurationMs    *int64 `json:"duration_ms"`
}

// RunListJSON is a page of GET /api/v1/runs.
type RunListJSON struct {
	Runs       []ListedRunJSON `json:"runs"`
	NextCursor string          `json:"next_cursor"` // "" on the last page
}

// APIRunList lists the runs of every backfill, newest first
// (?asset=&state=&backfill=&from=&to=&limit=&cursor=).
func (h *Handler) APIRunList(c echo.Context) error {
	limit, err := pageLimit(c, DefaultRunsPageLimit, MaxRunsPageLimit)
	if err != nil {
		return err
	}
	f, err := h.runFilter(c)
	if err != nil {
		return err
	}
	rows, err := h.Store.RunList(c.Request().Context(), f, limit+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, limit, runCursor)
	out := RunListJSON{Runs: make([]ListedRunJSON, 0, len(rows)), NextCursor: next}
	now := h.Now()
	for _, r := range rows {
		out.Runs = append(out.Runs, ListedRunJSON{ChunkJSON: toChunkJSON(r.Run), BackfillTitle: r.BackfillTitle,
			LaunchedBy: r.BackfillCreatedBy, DurationMs: runDurationMs(r.Run, now)})
	}
	return c.JSON(http.StatusOK, out)
}
