package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// Overview renders every asset with its health bar, grouped by group.
func (h *Handler) Overview(c echo.Context) error {
	ctx := c.Request().Context()
	filter, err := assetFilterParams(c, h.Workspace().Workspace)
	status := http.StatusOK
	if ue := (*UserError)(nil); errors.As(err, &ue) && ue.Status == http.StatusBadRequest {
		// A filter in the address that is no filter: every asset, with
		// the error beside the filter (as /runs shows its own), a 400.
		filter = views.AssetFilter{Groups: filter.Groups, Page: 1, Error: ue.Message, ErrorField: ue.Field}
		status, err = http.StatusBadRequest, nil
	}
	if err != nil {
		return err
	}
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return err
	}
	// Shared by the overview's viewers for a moment (pageKey).
	m, err := h.pageModels.get(ctx, pageKey{page: "overview", ws: h.Workspace(), version: h.Store.PageVersion(), at: pageStep(sc.now)}, func() (any, error) {
		return h.overviewModel(ctx, sc)
	})
	if err != nil {
		return err
	}
	// The model is shared: the filter works on a copy of its lists.
	o := m.(views.Overview)
	o.Groups = slices.Clone(o.Groups)
	for i := range o.Groups {
		o.Groups[i].Assets = slices.Clone(o.Groups[i].Assets)
	}
	if err := filterOverview(&o, filter); err != nil {
		return err
	}
	return render(c, status, views.OverviewPage(page(c, "Assets", "overview"), o))
}

// overviewModel is the overview's model at sc.
func (h *Handler) overviewModel(ctx context.Context, sc *staleCtx) (views.Overview, error) {
	assets, err := h.assetHealths(ctx, sc)
	if err != nil {
		return views.Overview{}, err
	}
	o := views.Overview{WorkspaceSource: h.Workspace().Source}
	var total catalog.HealthCounts
	groupIdx := map[string]int{}
	for _, a := range assets {
		total = total.Plus(a.health)
		bar := healthBar(a.health)
		last := "never"
		if a.lastMat != nil {
			last = views.Ago(db.FromMillis(*a.lastMat), a.Now)
		}
		g := groupOf(a.Def)
		i, ok := groupIdx[g]
		if !ok {
			i = len(o.Groups)
			groupIdx[g] = i
			o.Groups = append(o.Groups, views.GroupSummary{Name: g})
		}
		o.Groups[i].Assets = append(o.Groups[i].Assets, views.AssetSummary{
			Key: a.Def.Key, Group: g, Scheme: a.Def.Scheme.Describe(), CodeVersion: a.Def.CodeVersion,
			Href: AssetHref(a.Def.Key), Health: bar, LastMaterialized: last,
		})
	}
	o.Totals = healthBar(total)
	if o.Active, err = h.ActiveBackfillRows(ctx); err != nil {
		return views.Overview{}, err
	}
	return o, nil
}

// assetsWithLastMat resolves every asset with its last materialization
// time (Unix ms, nil when never), by asset id.
func (h *Handler) assetsWithLastMat(ctx context.Context) ([]assetCtx, map[int64]*int64, error) {
	assets, err := h.assets(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows, err := h.Store.Assets(ctx)
	if err != nil {
		return nil, nil, err
	}
	last := make(map[int64]*int64, len(rows))
	for _, r := range rows {
		last[r.ID] = r.LastMaterializedAt
	}
	return assets, last, nil
}

// assetHealth is an asset with its last materialization (nil: never) and
// the health of all its partitions.
type assetHealth struct {
	assetCtx
	lastMat *int64
	health  catalog.HealthCounts
}

// assetHealths is every asset (assetsWithLastMat) with its health at sc,
// the facts of all of them computed at once (warmFacts): what the
// overview, the lineage graph and the API's asset list each show.
func (h *Handler) assetHealths(ctx context.Context, sc *staleCtx) ([]assetHealth, error) {
	assets, last, err := h.assetsWithLastMat(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.warmFacts(ctx, sc, 1); err != nil {
		return nil, err
	}
	out := make([]assetHealth, 0, len(assets))
	for _, a := range assets {
		facts, err := h.staleFacts(ctx, sc, a.Def)
		if err != nil {
			return nil, err
		}
		out = append(out, assetHealth{a, last[a.ID], facts.Health(0, a.Space.Len()-1, sc.now)})
	}
	return out, nil
}

// assetHealthsNow is assetHealths in the staleness context of now.
func (h *Handler) assetHealthsNow(ctx context.Context) ([]assetHealth, error) {
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return nil, err
	}
	return h.assetHealths(ctx, sc)
}

// healthBar draws health counts (StaleFacts.Health) as a bar: fresh (the
// "materialized" segment), stale, failed, in progress, missing. Every
// health bar, the grids' buckets and the API's asset counts come from it.
func healthBar(c catalog.HealthCounts) views.Bar {
	b := views.Bar{Health: true, LastFailed: c.LastAttemptFailed}
	for _, h := range catalog.Healths {
		st := string(h)
		if h == catalog.HealthFresh {
			st = db.StatusMaterialized
		}
		b.Segs = append(b.Segs, views.Seg{Status: st, N: c.Of(h)})
		b.Total += c.Of(h)
	}
	return b
}

func barOf(c db.Counts) views.Bar {
	b := views.Bar{}
	for _, st := range db.Statuses {
		b.Segs = append(b.Segs, views.Seg{Status: st, N: c[st]})
		b.Total += c[st]
	}
	return b
}

// AssetHref is the asset page's path.
func AssetHref(key string) string { return "/assets/" + url.PathEscape(key) }

// PartitionHref is the partition page's path.
func PartitionHref(asset, key string) string {
	return "/assets/" + url.PathEscape(asset) + "/partitions/" + url.PathEscape(key)
}
