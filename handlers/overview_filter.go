package handlers

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// assetFilterMaxQ bounds the overview filter's name text (characters).
const assetFilterMaxQ = 200

// assetListPage is how many assets the overview lists a page: the page
// budget's benchmark workspace (200 assets) fits on one; a workspace of a
// thousand is listed in pages (or filtered) rather than in one page of
// more than a megabyte.
const assetListPage = 200

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
	f.Page = 1
	if p := c.QueryParam("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return f, BadRequest("page", "page %q is not a page number; use 1 or more", p)
		}
		f.Page = n
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
func filterOverview(o *views.Overview, f views.AssetFilter) error {
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
	if err := pageOverview(o, &f); err != nil {
		return err
	}
	o.Filter = f
	o.LineageHref = "/lineage"
	if q := filterQuery(f); q != "" {
		o.LineageHref += "?" + q
	}
	return nil
}

// pageOverview keeps the rows of page f.Page of the filtered list (a group
// without any on it goes), sets what f shows and the links to the pages
// around it; a page past the last is a 400.
func pageOverview(o *views.Overview, f *views.AssetFilter) error {
	last := max(1, (f.Shown+assetListPage-1)/assetListPage)
	if f.Page > last {
		return BadRequest("page", "page %d is past the last page of this list (%d)", f.Page, last)
	}
	lo, hi := (f.Page-1)*assetListPage, min(f.Page*assetListPage, f.Shown)
	f.From, f.To = min(lo+1, f.Shown), hi
	i := 0
	groups := o.Groups[:0]
	for _, g := range o.Groups {
		rows := g.Assets[:0]
		for _, a := range g.Assets {
			if i >= lo && i < hi {
				rows = append(rows, a)
			}
			i++
		}
		if len(rows) > 0 {
			g.Assets = rows
			groups = append(groups, g)
		}
	}
	o.Groups = groups
	href := func(p int) string {
		q, _ := url.ParseQuery(filterQuery(*f))
		if p > 1 {
			q.Set("page", strconv.Itoa(p))
		}
		if len(q) == 0 {
			return "/"
		}
		return "/?" + q.Encode()
	}
	if f.Page > 1 {
		f.PrevHref = href(f.Page - 1)
	}
	if f.Page < last {
		f.NextHref = href(f.Page + 1)
	}
	return nil
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
