package handlers

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// assetFilterMaxQ bounds the overview filter's name text (characters).
const assetFilterMaxQ = 200

// assetFilterParams reads and checks the overview's filter: q (text the
// asset's key contains, any case), group (one of the workspace's groups)
// and state (failed, stale, running). Unknown values are 400s naming the
// ones to use.
func assetFilterParams(c echo.Context, ws *catalog.Workspace) (views.AssetFilter, error) {
	f := views.AssetFilter{Q: strings.TrimSpace(c.QueryParam("q")), Group: c.QueryParam("group"), State: c.QueryParam("state")}
	for _, a := range ws.Assets {
		if g := groupOf(a); !slices.Contains(f.Groups, g) {
			f.Groups = append(f.Groups, g)
		}
	}
	if !utf8.ValidString(f.Q) {
		return f, BadRequest("q", "the name filter is not valid UTF-8; type the part of the asset's name to look for")
	}
	if n := utf8.RuneCountInString(f.Q); n > assetFilterMaxQ {
		return f, BadRequest("q", "the name filter is %d characters long; use at most %d", n, assetFilterMaxQ)
	}
	if f.Group != "" && !slices.Contains(f.Groups, f.Group) {
		return f, BadRequest("group", "unknown group %q; use one of %s", f.Group, strings.Join(f.Groups, ", "))
	}
	if f.State != "" && !slices.ContainsFunc(views.AssetFilterStates, func(s struct{ Value, Label string }) bool { return s.Value == f.State }) {
		return f, BadRequest("state", "unknown state %q; use failed, stale or running", f.State)
	}
	return f, nil
}

// groupOf is the group an asset is listed in on the overview.
func groupOf(a *catalog.Asset) string {
	if a.Group == "" {
		return "default"
	}
	return a.Group
}

// keeps reports whether the filter f shows asset a (its health bar as the
// overview draws it).
func keeps(f views.AssetFilter, a views.AssetSummary) bool {
	if f.Q != "" && !strings.Contains(strings.ToLower(a.Key), strings.ToLower(f.Q)) {
		return false
	}
	if f.Group != "" && a.Group != f.Group {
		return false
	}
	if f.State == "" {
		return true
	}
	want := map[string]string{"failed": db.StatusFailed, "stale": views.SegStale, "running": db.StatusInProgress}[f.State]
	for _, s := range a.Health.Segs {
		if s.Status == want && s.N > 0 {
			return true
		}
	}
	return false
}

// filterOverview keeps the overview's groups and rows that f shows (a group
// left empty goes), counts them, and points the lineage graph the page
// loads at the same filter (it dims the assets left out).
func filterOverview(o *views.Overview, f views.AssetFilter) {
	shown := map[string]bool{}
	groups := o.Groups[:0]
	for _, g := range o.Groups {
		rows := g.Assets[:0]
		for _, a := range g.Assets {
			f.Total++
			if keeps(f, a) {
				rows = append(rows, a)
				shown[a.Key] = true
			}
		}
		if len(rows) > 0 {
			g.Assets = rows
			groups = append(groups, g)
		}
	}
	o.Groups = groups
	f.Shown = len(shown)
	o.Filter = f
	o.LineageHref = "/lineage"
	if q := filterQuery(f); q != "" {
		o.LineageHref += "?" + q
	}
}

// filterQuery is the query of filter f ("" when it shows everything).
func filterQuery(f views.AssetFilter) string {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.Q, "group": f.Group, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}
