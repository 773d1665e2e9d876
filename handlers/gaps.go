package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// MaxGapRanges bounds the ranges one gaps answer lists.
const MaxGapRanges = 10000

// GapsPageSize is how many ranges a page of /assets/{key}/gaps lists;
// AssetPageGaps how many the asset page lists before linking to it.
const (
	GapsPageSize  = 200
	AssetPageGaps = 50
)

// GapRange is a run of consecutive missing partitions.
type GapRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
	Count int64  `json:"count"`
	Lo    int64  `json:"-"`
	Hi    int64  `json:"-"`
}

// Gaps is the answer of a gap search: the missing (never materialized)
// partitions below the asset's watermark, as ranges with counts. The
// new-backfill page's "Fill gaps" choice shows the same ranges.
type Gaps struct {
	Asset     string     `json:"asset"`
	Mode      string     `json:"mode"` // "catch-up" (holes inside the materialized range) or "from"
	From      string     `json:"from,omitempty"`
	Watermark string     `json:"watermark,omitempty"`
	Skipped   bool       `json:"skipped"`
	Warning   string     `json:"warning,omitempty"`
	Note      string     `json:"note,omitempty"`
	Ranges    []GapRange `json:"ranges"`
	Total     int64      `json:"total"`
	Truncated bool       `json:"truncated"`
	// Next, when Truncated, is the key after the last range found: a search
	// from it goes on where this one stopped.
	Next string `json:"-"`
}

// NoWatermarkWarning is the warning of an asset without a watermark.
func NoWatermarkWarning(asset string) string {
	return fmt.Sprintf("asset %s has no watermark, so its gaps are not searched (Tessera never fills up to \"now\"); "+
		"record the last partition your live pipeline has processed with: tessera report %s --watermark KEY, or "+
		"curl -X POST -H \"Authorization: Bearer $TESSERA_TOKEN\" -H 'Content-Type: application/json' -d '{\"partition\":\"KEY\"}' \"$TESSERA_URL/api/v1/assets/%s/watermark\"", asset, asset, asset)
}

// boundIndex resolves a key (for multi schemes, a full key or just the time
// part) to the first (end=false) or last index it denotes.
func boundIndex(a assetCtx, key string, end bool) (int64, error) {
	lo, hi, err := catalog.ParseRange(a.Space, a.Def.Scheme, key, key)
	if err != nil {
		return 0, err
	}
	if end {
		return hi, nil
	}
	return lo, nil
}

// FindGaps lists the missing partitions of asset key below its watermark:
// without from, only the holes inside the materialized range; with from,
// everything missing from that key. Bad input is a *UserError.
func (h *Handler) FindGaps(ctx context.Context, key, from string) (Gaps, error) {
	a, err := h.asset(ctx, key)
	if err != nil {
		return Gaps{}, err
	}
	g := Gaps{Asset: a.Def.Key, Mode: "catch-up", From: from, Ranges: []GapRange{}}
	if from != "" {
		g.Mode = "from"
	}
	var fromIdx int64
	if from != "" {
		if fromIdx, err = boundIndex(a, from, false); err != nil {
			return g, BadRequest("from", "from %q is not a partition of %s (%s): %s", from, a.Def.Key, a.Def.Scheme.Describe(), keyReason(err))
		}
	}
	w, err := h.Store.GetWatermark(ctx, a.ID)
	if errors.Is(err, db.ErrNotFound) {
		g.Skipped, g.Warning = true, NoWatermarkWarning(a.Def.Key)
		return g, nil
	}
	if err != nil {
		return g, err
	}
	g.Watermark = w.Partition
	wm, err := boundIndex(a, w.Partition, true)
	if err != nil {
		g.Skipped, g.Warning = true, fmt.Sprintf("the watermark %q of %s is no longer a partition of its scheme (%s); record a new one", w.Partition, a.Def.Key, keyReason(err))
		return g, nil
	}
	_, facts, err := h.assetFacts(ctx, a.Def)
	if err != nil {
		return g, err
	}
	var lo, hi int64
	if from != "" {
		if fromIdx > wm {
			return g, BadRequest("from", "from %s is after the watermark %s of %s: there is nothing to fill; pick a from at or before the watermark", from, w.Partition, a.Def.Key)
		}
		lo, hi = fromIdx, wm
	} else {
		first, last, ok := facts.MaterializedBounds()
		switch {
		case !ok:
			g.Note = "nothing is materialized yet, so there are no holes inside the materialized range; use --from KEY to fill from a start"
			return g, nil
		case wm < first:
			g.Note = fmt.Sprintf("the watermark %s is below the materialized range (%s … %s): nothing to fill", w.Partition, a.Space.Key(first), a.Space.Key(last))
			return g, nil
		}
		lo, hi = first, min(last, wm)
	}
	rs, truncated := facts.MissingRanges(lo, hi, MaxGapRanges)
	g.Truncated = truncated
	if n := len(rs); truncated && n > 0 && rs[n-1].Hi+1 < a.Space.Len() {
		g.Next = a.Space.Key(rs[n-1].Hi + 1)
	}
	for _, r := range rs {
		g.Ranges = append(g.Ranges, GapRange{Start: a.Space.Key(r.Lo), End: a.Space.Key(r.Hi), Count: r.Len(), Lo: r.Lo, Hi: r.Hi})
		g.Total += r.Len()
	}
	return g, nil
}

func keyReason(err error) string {
	var ke *catalog.KeyError
	if errors.As(err, &ke) {
		return ke.Reason
	}
	return err.Error()
}

// APIGaps answers GET /api/v1/assets/:key/gaps?from=KEY.
func (h *Handler) APIGaps(c echo.Context) error {
	g, err := h.FindGaps(c.Request().Context(), pathParam(c, "key"), strings.TrimSpace(c.QueryParam("from")))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

// watermarkBody is the body of POST /api/v1/assets/:key/watermark.
type watermarkBody struct {
	Partition *string `json:"partition"`
}

// APISetWatermark records the live pipeline's last processed partition:
// POST /api/v1/assets/:key/watermark {"partition": KEY}.
func (h *Handler) APISetWatermark(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	key, err := inputValue(c, "partition", func(b *watermarkBody) *string { return b.Partition })
	if err != nil {
		return err
	}
	if key == "" {
		return BadRequest("partition", "partition is required: the last partition your live pipeline has processed, e.g. {\"partition\": %q}", a.Space.Key(max(a.Space.Len()-1, 0)))
	}
	idx, err := boundIndex(a, key, true)
	if err != nil {
		return BadRequest("partition", "%q is not a partition of %s (%s): %s", key, a.Def.Key, a.Def.Scheme.Describe(), keyReason(err))
	}
	now := h.Now()
	if err := h.Store.SetWatermark(ctx, a.ID, a.Def.Key, key, idx, Actor(c), now); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "partition": key, "set_at": apiTime(now)})
}

// APIGetWatermark returns the asset's watermark (404 with how to set one).
func (h *Handler) APIGetWatermark(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	w, err := h.Store.GetWatermark(ctx, a.ID)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("%s", NoWatermarkWarning(a.Def.Key))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "partition": w.Partition, "set_at": msTime(w.SetAt), "actor": w.Actor})
}

// GapsHref is the page listing every gap range of asset, page by page
// (from: the search's start key, empty for the holes inside the
// materialized range; page 1 is the first).
func GapsHref(asset, from string, page int) string {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	h := "/assets/" + url.PathEscape(asset) + "/gaps"
	if len(q) > 0 {
		h += "?" + q.Encode()
	}
	return h
}

// gapsModel is the view of a gap search listing its first limit ranges,
// with a link to the page that lists them all when some are left out.
func gapsModel(g Gaps, limit int) *views.GapsModel {
	m := gapsPageModel(g, 0, limit)
	if len(m.Ranges) < len(g.Ranges) {
		m.AllHref = GapsHref(g.Asset, g.From, 1)
	}
	return m
}

// gapsPageModel is the view of ranges [offset, offset+limit) of a gap search.
func gapsPageModel(g Gaps, offset, limit int) *views.GapsModel {
	m := &views.GapsModel{Asset: g.Asset, Mode: g.Mode, From: g.From, Watermark: g.Watermark, Warning: g.Warning, Note: g.Note,
		Skipped: g.Skipped, Truncated: g.Truncated, Total: g.Total, RangeCount: len(g.Ranges), Offset: offset}
	offset = min(max(offset, 0), len(g.Ranges))
	for _, r := range g.Ranges[offset:min(offset+limit, len(g.Ranges))] {
		m.Ranges = append(m.Ranges, views.GapRow{Start: r.Start, End: r.End, Count: r.Count})
	}
	if g.Truncated && g.Next != "" && offset+len(m.Ranges) == len(g.Ranges) {
		m.ContinueFrom, m.ContinueHref = g.Next, GapsHref(g.Asset, g.Next, 1)
	}
	return m
}

// withGapsBackfill offers "Backfill these gaps": the new-backfill form
// preselected to fill them (the form's "Fill gaps" choice, which searches
// the same gaps again), or says why the form cannot take them.
func withGapsBackfill(m *views.GapsModel, g Gaps) {
	switch {
	case g.Skipped || g.Total == 0:
	case g.Truncated:
		m.BackfillNote = fmt.Sprintf("More than %s ranges are missing, too many for one backfill from the form: fill them in parts, giving the new-backfill form's Start.", views.Num(MaxGapRanges))
	case g.Total > MaxFormKeys:
		m.BackfillNote = fmt.Sprintf("%s partitions are missing; the new-backfill form fills at most %s at once: fill them in parts, giving its Start.", views.Num(g.Total), views.Num(MaxFormKeys))
	default:
		q := url.Values{}
		q.Set("asset", g.Asset)
		q.Set("selector", "gaps")
		if g.From != "" {
			q.Set("start", g.From)
		}
		m.BackfillHref = "/backfills/new?" + q.Encode()
	}
}

// assetGapsModel is the asset page's gap list: the first AssetPageGaps
// ranges, and for those who may launch backfills, "Backfill these gaps".
func assetGapsModel(g Gaps, canLaunch bool) *views.GapsModel {
	m := gapsModel(g, AssetPageGaps)
	if canLaunch {
		withGapsBackfill(m, g)
	}
	return m
}

// AssetGaps renders the gaps of an asset (?from=KEY), GapsPageSize ranges a
// page (?page=N): a page of its own, or for htmx the list alone.
func (h *Handler) AssetGaps(c echo.Context) error {
	from := strings.TrimSpace(c.QueryParam("from"))
	p, err := intParam("page", strings.TrimSpace(c.QueryParam("page")), 1, 1, "a whole number from 1")
	if err != nil {
		return err
	}
	pg := int(p)
	g, err := h.FindGaps(c.Request().Context(), pathParam(c, "key"), from)
	if err != nil {
		return err
	}
	// A page past the end (the gaps were filled meanwhile) shows the last one.
	pages := max((len(g.Ranges)+GapsPageSize-1)/GapsPageSize, 1)
	pg = min(pg, pages)
	m := gapsPageModel(g, (pg-1)*GapsPageSize, GapsPageSize)
	if pg > 1 {
		m.PrevHref = GapsHref(g.Asset, from, pg-1)
	}
	if pg < pages {
		m.NextHref = GapsHref(g.Asset, from, pg+1)
	}
	if canOperate(c) {
		withGapsBackfill(m, g)
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, views.GapList(*m))
	}
	return render(c, http.StatusOK, views.GapsPage(page(c, "Gaps of "+g.Asset, "overview"), *m, AssetHref(g.Asset)+"?view=staleness"))
}
