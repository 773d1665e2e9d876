package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// lineageHops is how far the asset page's graph reaches up- and downstream.
const lineageHops = 2

// barHealth is the one word of an asset's health bar the lineage graph
// colours a node by, worst first: failed (some partition's last run
// failed), running, stale, missing (nothing materialized), partial (some
// partitions missing), fresh.
func barHealth(b views.Bar) string {
	n := map[string]int64{}
	for _, s := range b.Segs {
		n[s.Status] += s.N
	}
	switch {
	case n[db.StatusFailed] > 0:
		return views.HealthFailed
	case n[db.StatusInProgress] > 0:
		return views.HealthRunning
	case n[views.SegStale] > 0:
		return views.HealthStale
	case n[db.StatusMaterialized] == 0:
		return views.HealthMissing
	case n[db.StatusMissing] > 0:
		return views.HealthPartial
	}
	return views.HealthFresh
}

// lineageOf lays out the graph of the assets keys (in that order) and the
// dependencies between them, each node coloured by health[key].
func lineageOf(ws *catalog.Workspace, keys []string, health map[string]string, focus string) views.Lineage {
	idx := make(map[string]int, len(keys))
	nodes := make([]views.GraphNode, len(keys))
	for i, k := range keys {
		idx[k] = i
		nodes[i] = views.GraphNode{Key: k, Href: AssetHref(k), Health: health[k], Focus: k == focus}
	}
	var edges []views.GraphEdge
	for i, k := range keys {
		a := ws.Asset(k)
		for _, d := range a.Deps {
			j, ok := idx[d.Asset]
			if !ok {
				continue
			}
			up := ws.Asset(d.Asset)
			edges = append(edges, views.GraphEdge{From: j, To: i, Mapping: string(catalog.ResolveMapping(d.Mapping, a.Scheme, up.Scheme))})
		}
	}
	return views.LayoutLineage(nodes, edges)
}

// Lineage draws every asset's lineage graph, coloured as the overview
// colours its rows; the overview's filter (q, group, state) dims the assets
// it leaves out. An htmx request (the overview loading it) gets the graph
// alone; any other a page of its own, which is also where the overview
// links without JavaScript.
func (h *Handler) Lineage(c echo.Context) error {
	ctx := c.Request().Context()
	ws := h.Workspace()
	filter, err := assetFilterParams(c, ws.Workspace)
	if err != nil {
		return err
	}
	assets, err := h.assetHealthsNow(ctx)
	if err != nil {
		return err
	}
	// The overview's order: groups as they first appear, file order in each.
	var groups []string
	byGroup := map[string][]views.AssetSummary{}
	for _, a := range assets {
		g := groupOf(a.Def)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		bar := healthBar(a.health)
		byGroup[g] = append(byGroup[g], views.AssetSummary{Key: a.Def.Key, Group: g, Health: bar})
	}
	var keys []string
	health := map[string]string{}
	dim := map[string]bool{}
	for _, g := range groups {
		for _, a := range byGroup[g] {
			keys = append(keys, a.Key)
			health[a.Key] = barHealth(a.Health)
			dim[a.Key] = filter.Active() && !keeps(filter, a)
		}
	}
	v := views.LineageView{Graph: lineageOf(ws.Workspace, keys, health, ""), Caption: nOfAssets(len(keys))}
	for i := range v.Graph.Nodes {
		v.Graph.Nodes[i].Dim = dim[v.Graph.Nodes[i].Key]
	}
	if filter.Active() {
		v.Caption += ", those the filter leaves out dimmed"
	}
	c.Response().Header().Add("Vary", "HX-Request")
	back, self := "/", "/lineage"
	if q := filterQuery(filter); q != "" {
		back, self = back+"?"+q, self+"?"+q
	}
	if c.Request().Header.Get("HX-Request") == "true" && c.Request().Header.Get("HX-History-Restore-Request") != "true" {
		v.PageHref = self
		return render(c, http.StatusOK, views.LineageGraph(v))
	}
	return render(c, http.StatusOK, views.LineagePage(page(c, "Lineage", "overview"), v, back))
}

// neighbourhood is the asset key and the assets within hops of it
// upstream and downstream, in file order.
func neighbourhood(ws *catalog.Workspace, key string, hops int) []string {
	in := map[string]bool{key: true}
	for _, dir := range []bool{true, false} {
		front := []string{key}
		for range hops {
			var next []string
			for _, k := range front {
				var near []string
				if dir {
					for _, d := range ws.Asset(k).Deps {
						near = append(near, d.Asset)
					}
				} else {
					for _, a := range ws.Dependents(k) {
						near = append(near, a.Key)
					}
				}
				for _, n := range near {
					if !in[n] && ws.Asset(n) != nil {
						in[n] = true
						next = append(next, n)
					}
				}
			}
			front = next
		}
	}
	var keys []string
	for _, a := range ws.Assets {
		if in[a.Key] {
			keys = append(keys, a.Key)
		}
	}
	return keys
}

func nOfAssets(n int) string {
	if n == 1 {
		return "1 asset"
	}
	return views.Num(int64(n)) + " assets"
}

// assetLineage is the asset page's graph: the asset and its neighbourhood
// (lineageHops up- and downstream), each coloured as the overview colours
// it (stored counts, stale partitions split out).
func (h *Handler) assetLineage(ctx context.Context, a assetCtx, sc *staleCtx) (views.LineageView, error) {
	ws := h.Workspace()
	keys := neighbourhood(ws.Workspace, a.Def.Key, lineageHops)
	var dyn catalog.DynamicKeys
	for _, k := range keys {
		if hasDynamic(ws.Asset(k).Scheme) {
			d, err := h.Store.LoadDynamicKeys(ctx)
			if err != nil {
				return views.LineageView{}, err
			}
			dyn = d
			break
		}
	}
	health := make(map[string]string, len(keys))
	for _, k := range keys {
		def := ws.Asset(k)
		facts, err := h.staleFacts(ctx, sc, def)
		if err != nil {
			return views.LineageView{}, err
		}
		n := def.Scheme.Space(a.Now, dyn).Len()
		health[k] = barHealth(healthBar(facts.Health(0, n-1, sc.now)))
	}
	caption := nOfAssets(len(keys)) + " within " + strconv.Itoa(lineageHops) + " steps up- and downstream"
	return views.LineageView{Graph: lineageOf(ws.Workspace, keys, health, a.Def.Key), Caption: caption, Focus: a.Def.Key}, nil
}
