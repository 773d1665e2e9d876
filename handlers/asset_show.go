package handlers

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// AssetShow renders an asset's definition and partition grid. Query:
// from, to (partition keys, inclusive) choose the window; status dims tiles
// of other statuses.
func (h *Handler) AssetShow(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	view, filter, err := assetViewParams(c)
	if err != nil {
		return err
	}
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return err
	}
	key := pageKey{page: "asset:" + a.Def.Key, query: c.QueryString(), operate: canOperate(c), ws: h.Workspace(), version: h.Store.PageVersion(), at: pageStep(sc.now)}
	m, err := h.pageModels.get(ctx, key, func() (any, error) {
		return h.assetPageModel(ctx, c, a, view, filter, sc)
	})
	if err != nil {
		return err
	}
	am := m.(assetModel)
	return render(c, am.status, views.AssetPageView(page(c, a.Def.Key, "overview"), am.v, am.bar))
}

// assetModel is what the asset page renders, and its HTTP status.
type assetModel struct {
	v      views.AssetPage
	bar    views.GridSelection
	status int
}

// assetPageModel builds the asset page's model (c for its query and role).
func (h *Handler) assetPageModel(ctx context.Context, c echo.Context, a assetCtx, view, filter string, sc *staleCtx) (assetModel, error) {
	facts, err := h.staleFacts(ctx, sc, a.Def)
	if err != nil {
		return assetModel{}, err
	}
	n := a.Space.Len()
	v := views.AssetPage{
		Key: a.Def.Key, Group: a.Def.Group, Description: a.Def.Description, Scheme: a.Def.Scheme.Describe(),
		CodeVersion: a.Def.CodeVersion, Pool: a.Def.Pool, Executor: a.Def.Executor.Kind,
		Health: healthBar(facts.Health(0, n-1, sc.now)), StatusFilter: filter, Empty: n == 0,
		From: c.QueryParam("from"), To: c.QueryParam("to"), View: view, CanLaunch: canOperate(c),
	}
	if v.ActiveBackfills, err = h.assetActiveBackfills(ctx, a.Def.Key); err != nil {
		return assetModel{}, err
	}
	v.StatusHref, v.StaleHref = viewHrefs(c.QueryParams())
	if view == "staleness" {
		v.Stale, err = h.stalePanel(ctx, a, facts, sc.now)
		if err != nil {
			return assetModel{}, err
		}
		if !v.CanLaunch { // viewers cannot launch: no backfill shortcuts
			v.Stale.BackfillStale, v.Stale.BackfillMissingStale = "", ""
		}
		g, err := h.FindGaps(ctx, a.Def.Key, "")
		if err != nil {
			return assetModel{}, err
		}
		v.Gaps = assetGapsModel(g, v.CanLaunch)
	}
	if f := a.Def.Freshness; f != nil {
		v.Freshness = freshnessText(f)
	}
	for _, d := range a.Def.Deps {
		v.Deps = append(v.Deps, views.Link{Label: d.Asset, Href: AssetHref(d.Asset)})
	}
	for _, other := range h.Workspace().Dependents(a.Def.Key) {
		v.Downstream = append(v.Downstream, views.Link{Label: other.Key, Href: AssetHref(other.Key)})
	}
	if v.Lineage, err = h.assetLineage(ctx, a, sc); err != nil {
		return assetModel{}, err
	}
	status := http.StatusOK
	bar := views.GridSelection{Asset: a.Def.Key, Multi: a.Def.Scheme.Kind() == catalog.KindMulti}
	if bar.Multi {
		if bar.DimensionChoices, bar.DimensionsComplete, err = h.dimensionChoices(ctx, []*catalog.Asset{a.Def}); err != nil {
			return assetModel{}, err
		}
	}
	if n > 0 {
		if status, err = h.assetGrids(ctx, a, &v, &bar, facts, sc.now); err != nil {
			return assetModel{}, err
		}
	}
	return assetModel{v: v, bar: bar, status: status}, nil
}

// assetViewParams reads and checks the asset page's view (status, the
// default, or staleness) and its status filter (a status, or with the
// staleness view a staleness reason).
func assetViewParams(c echo.Context) (view, filter string, err error) {
	view = c.QueryParam("view")
	switch view {
	case "", "status":
		view = "status"
	case "staleness":
	default:
		return "", "", BadRequest("view", "unknown view %q; use status or staleness", view)
	}
	filter = c.QueryParam("status")
	if filter != "" && !slices.Contains(db.Statuses, filter) && (view != "staleness" || !slices.Contains(views.ReasonOrder, filter)) {
		if view == "staleness" {
			return "", "", BadRequest("status", "unknown staleness reason %q; use one of %s", filter, strings.Join(views.ReasonOrder, ", "))
		}
		return "", "", BadRequest("status", "unknown status %q; use one of materialized, failed, in_progress, missing", filter)
	}
	return view, filter, nil
}

// viewHrefs are the links to the page's status and staleness views, keeping
// the query's other parameters (the window) and dropping its filter.
func viewHrefs(q url.Values) (statusHref, staleHref string) {
	sq, tq := url.Values{}, url.Values{}
	for k, vs := range q {
		if k != "view" && k != "status" {
			sq[k], tq[k] = vs, vs
		}
	}
	sq.Set("view", "staleness")
	return "?" + tq.Encode(), "?" + sq.Encode()
}

// freshnessText words a freshness policy for the asset page: its maximum
// lag and its deadline, joined by "; ".
func freshnessText(f *catalog.Freshness) string {
	var parts []string
	if f.MaxLag > 0 {
		parts = append(parts, "at most "+catalog.FormatDuration(f.MaxLag)+" behind")
	}
	if f.DeadlineHHMM != "" {
		parts = append(parts, "each window built "+f.DeadlineLabel()+" after it ends")
	}
	return strings.Join(parts, "; ")
}

// assetGrids fills the grids of a non-empty asset's page v: the window
// shown in detail (v.From, v.To), the history around it, the links to the
// windows before and after it and to zoom out, and the selection bar's
// starting range. It returns the page's HTTP status: 400 when the requested
// window is not valid (the page then shows the default window).
func (h *Handler) assetGrids(ctx context.Context, a assetCtx, v *views.AssetPage, bar *views.GridSelection, facts *db.StaleFacts, now time.Time) (int, error) {
	view, filter := v.View, v.StatusFilter
	n := a.Space.Len()
	status := http.StatusOK
	var err error
	v.FirstKey, v.LastKey = a.Space.Key(0), a.Space.Key(n-1)
	l := layoutFor(a)
	lo, hi, explicit, rangeErr := windowOf(a, l, v.From, v.To)
	if rangeErr != nil {
		v.RangeError = rangeErr.Error()
		status = http.StatusBadRequest
	}
	q := url.Values{}
	if filter != "" {
		q.Set("status", filter)
	}
	if view == "staleness" {
		q.Set("view", view)
	}
	size := hi - lo + 1
	overlay := &staleOverlay{facts: facts, now: now}
	switch {
	case view == "staleness" && size <= l.maxTiles():
		v.Detail = staleTileGrid(a, l, lo, hi, facts, filter, now)
	case view == "staleness":
		v.Detail = staleBucketGrid(a, lo, hi, HistoryBuckets, facts, filter, [2]int64{-1, -1}, q, now)
	case size <= l.maxTiles():
		v.Detail, err = h.tileGrid(ctx, a, l, lo, hi, filter, overlay)
	default:
		v.Detail, err = h.bucketGrid(ctx, a, lo, hi, HistoryBuckets, filter, [2]int64{-1, -1}, q, overlay)
	}
	if err != nil {
		return status, err
	}
	if lo > 0 || hi < n-1 {
		if view == "staleness" {
			v.History = staleBucketGrid(a, 0, n-1, HistoryBuckets, facts, filter, [2]int64{lo, hi}, q, now)
		} else {
			v.History, err = h.bucketGrid(ctx, a, 0, n-1, HistoryBuckets, filter, [2]int64{lo, hi}, q, overlay)
		}
		if err != nil {
			return status, err
		}
	}
	// The selection bar starts out holding the window shown (and, on a
	// grid filtered on failed or missing, the form's "only missing and
	// failed"), so that "Backfill…" with nothing selected on the grid
	// preselects what the page shows, not the asset's whole history.
	bar.Start, bar.End, bar.FirstKey, bar.LastKey = a.Space.Key(lo), a.Space.Key(hi), v.FirstKey, v.LastKey
	bar.OnlyMissingFailed = view == "status" && (filter == db.StatusFailed || filter == db.StatusMissing)
	bar.Tiles = v.Detail.Mode != "buckets"
	v.WindowLabel = keySpan(a.Space.Key(lo), a.Space.Key(hi)) + " (" + views.Num(size) + " partition" + plural(size) + ")"
	windowLinks(v, a, q, lo, hi, explicit)
	return status, nil
}

// windowLinks sets the links to the windows of the same size before and
// after the window [lo, hi] shown, and to zoom out of it.
func windowLinks(v *views.AssetPage, a assetCtx, q url.Values, lo, hi int64, explicit bool) {
	n := a.Space.Len()
	size := hi - lo + 1
	if lo > 0 {
		plo := max(lo-size, 0)
		v.Prev = rangeHref(q, a.Space.Key(plo), a.Space.Key(lo-1))
	}
	if hi < n-1 {
		nhi := min(hi+size, n-1)
		v.Next = rangeHref(q, a.Space.Key(hi+1), a.Space.Key(nhi))
	}
	// Zoom out triples the window, up to the whole history, which it
	// names as a range: the page without one is the default window,
	// smaller than the whole history (a zoom in). Showing the whole
	// history already, there is nothing to zoom out to.
	if explicit && (lo > 0 || hi < n-1) {
		zlo, zhi := max(lo-size, 0), min(hi+size, n-1)
		v.ZoomOut = rangeHref(q, a.Space.Key(zlo), a.Space.Key(zhi))
	}
}

// windowOf resolves the window shown in detail: the requested range, or by
// default the newest whole rows that fit in TileLimit tiles.
func windowOf(a assetCtx, l gridLayout, from, to string) (lo, hi int64, explicit bool, err error) {
	n := a.Space.Len()
	if from != "" || to != "" {
		lo, hi, err = requestedRange(a, l.maxTiles(), from, to)
		if err == nil {
			return lo, hi, true, nil
		}
	}
	hi = n - 1
	lo = max(n-l.maxTiles(), 0)
	if lo > 0 {
		lo = l.rowStartAfter(a, lo)
	}
	return lo, hi, false, err
}

func requestedRange(a assetCtx, limit int64, from, to string) (int64, int64, error) {
	n := a.Space.Len()
	switch {
	case from != "" && to != "":
		return catalog.ParseRange(a.Space, a.Def.Scheme, from, to)
	case from != "":
		lo, _, err := catalog.ParseRange(a.Space, a.Def.Scheme, from, from)
		if err != nil {
			return 0, 0, err
		}
		return lo, min(lo+limit-1, n-1), nil
	default:
		_, hi, err := catalog.ParseRange(a.Space, a.Def.Scheme, to, to)
		if err != nil {
			return 0, 0, err
		}
		return max(hi-limit+1, 0), hi, nil
	}
}

// assetActiveBackfills lists the unfinished backfills that select asset key.
func (h *Handler) assetActiveBackfills(ctx context.Context, key string) ([]views.BackfillRow, error) {
	active, err := h.Store.Backfills(ctx, db.ActiveBackfillStates, key, 0, 10)
	if err != nil {
		return nil, err
	}
	rows := make([]views.BackfillRow, 0, len(active))
	for _, b := range active {
		rows = append(rows, backfillRow(b, h.Now(), zoneOf(ctx)))
	}
	return rows, nil
}

// AssetActiveBackfillsPartial renders the asset page's active backfills
// (htmx, on every backfill change): a backfill launched or finished after the
// page loaded shows without a reload.
func (h *Handler) AssetActiveBackfillsPartial(c echo.Context) error {
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	rows, err := h.assetActiveBackfills(c.Request().Context(), a.Def.Key)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AssetActiveBackfills(rows))
}
