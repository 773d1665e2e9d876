package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// MaxGapRanges bounds the ranges one gaps answer lists.
const MaxGapRanges = 10000

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
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return g, err
	}
	facts, err := h.staleFacts(ctx, sc, a.Def)
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

// APISetWatermark records the live pipeline's last processed partition:
// POST /api/v1/assets/:key/watermark {"partition": KEY}.
func (h *Handler) APISetWatermark(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.asset(ctx, pathParam(c, "key"))
	if err != nil {
		return err
	}
	key, err := inputValue(c, "partition")
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
	a, err := h.asset(ctx, pathParam(c, "key"))
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

// gapsModel is the view of a gap search.
func gapsModel(g Gaps, limit int) *views.GapsModel {
	m := &views.GapsModel{Asset: g.Asset, Mode: g.Mode, From: g.From, Watermark: g.Watermark, Warning: g.Warning, Note: g.Note,
		Skipped: g.Skipped, Truncated: g.Truncated, Total: g.Total, RangeCount: len(g.Ranges)}
	for i, r := range g.Ranges {
		if i == limit {
			break
		}
		m.Ranges = append(m.Ranges, views.GapRow{Start: r.Start, End: r.End, Count: r.Count})
	}
	return m
}

// AssetGaps renders the gap list of an asset (?from=KEY) as an HTML
// fragment: the asset page shows it and the new-backfill page can load it.
func (h *Handler) AssetGaps(c echo.Context) error {
	g, err := h.FindGaps(c.Request().Context(), pathParam(c, "key"), strings.TrimSpace(c.QueryParam("from")))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.GapList(*gapsModel(g, 500)))
}
