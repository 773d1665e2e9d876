package handlers

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// Overview renders every asset with its health bar, grouped by group.
func (h *Handler) Overview(c echo.Context) error {
	ctx := c.Request().Context()
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
	return render(c, http.StatusOK, views.OverviewPage(page(c, "Assets", "overview"), m.(views.Overview)))
}

// overviewModel is the overview's model at sc.
func (h *Handler) overviewModel(ctx context.Context, sc *staleCtx) (views.Overview, error) {
	assets, counts, lastMat, err := h.assetsWithCounts(ctx)
	if err != nil {
		return views.Overview{}, err
	}
	if err := h.warmFacts(ctx, sc); err != nil {
		return views.Overview{}, err
	}
	o := views.Overview{WorkspaceSource: h.Workspace().Source}
	total := db.Counts{}
	groupIdx := map[string]int{}
	for _, a := range assets {
		facts, err := h.staleFacts(ctx, sc, a.Def)
		if err != nil {
			return views.Overview{}, err
		}
		bar := withStale(healthBar(counts[a.ID], a.Space.Len()), facts.MaterializedStale(sc.now))
		for _, s := range bar.Segs {
			total[s.Status] += s.N
		}
		last := "never"
		if t := lastMat[a.ID]; t != nil {
			last = views.Ago(db.FromMillis(*t), a.Now)
		}
		g := a.Def.Group
		if g == "" {
			g = "default"
		}
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
	stale := total[views.SegStale]
	total[db.StatusMaterialized] += stale
	o.Totals = withStale(barOf(total), stale)
	if o.Active, err = h.ActiveBackfillRows(ctx); err != nil {
		return views.Overview{}, err
	}
	return o, nil
}

// assetsWithCounts resolves every asset with its stored status counts and
// last materialization time (Unix ms, nil when never), by asset id.
func (h *Handler) assetsWithCounts(ctx context.Context) ([]assetCtx, map[int64]db.Counts, map[int64]*int64, error) {
	assets, err := h.assets(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	counts, err := h.Store.AssetCounts(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	rows, err := h.Store.Assets(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	last := make(map[int64]*int64, len(rows))
	for _, r := range rows {
		last[r.ID] = r.LastMaterializedAt
	}
	return assets, counts, last, nil
}

// healthBar turns stored counts and the space size into a bar with missing.
func healthBar(c db.Counts, size int64) views.Bar {
	full := db.Counts{}
	var stored int64
	for st, n := range c {
		full[st] = n
		stored += n
	}
	full[db.StatusMissing] = max(size-stored, 0)
	return barOf(full)
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
