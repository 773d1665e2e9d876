package handlers_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/testkit"
)

// lineageNode is a node of a drawn lineage graph.
type lineageNode struct {
	Key, Health, Class, Title string
	X, Y, W                   int
	Sel                       *goquery.Selection
}

// lineageNodes is the nodes of the lineage graph in doc, in drawing order:
// each link of the graph's SVG, its asset from its address, its health
// from its class (h-…).
func lineageNodes(t *testing.T, doc *goquery.Document) []lineageNode {
	t.Helper()
	var out []lineageNode
	doc.Find(`[data-testid="lineage-svg"] > a`).Each(func(_ int, s *goquery.Selection) {
		key, err := url.PathUnescape(strings.TrimPrefix(s.AttrOr("href", ""), "/assets/"))
		if err != nil || !strings.HasPrefix(s.AttrOr("href", ""), "/assets/") {
			t.Fatalf("a lineage node links to %q", s.AttrOr("href", ""))
		}
		n := lineageNode{Key: key, Class: s.AttrOr("class", ""), Title: s.Find("title").Text(), Sel: s}
		for _, c := range strings.Fields(n.Class) {
			if h, ok := strings.CutPrefix(c, "h-"); ok {
				n.Health = h
			}
		}
		r := s.Find("rect")
		n.X, _ = strconv.Atoi(r.AttrOr("x", ""))
		n.Y, _ = strconv.Atoi(r.AttrOr("y", ""))
		n.W, _ = strconv.Atoi(r.AttrOr("width", ""))
		out = append(out, n)
	})
	return out
}

// lineageKeys is the assets of the lineage graph in doc, in drawing order.
func lineageKeys(t *testing.T, doc *goquery.Document) []string {
	var keys []string
	for _, n := range lineageNodes(t, doc) {
		keys = append(keys, n.Key)
	}
	return keys
}

var pathNums = regexp.MustCompile(`-?\d+`)

// lineageEdges is each edge of the graph in doc as "from>to" with the
// mapping of its group: an edge leaves the middle of its upstream's right
// side and reaches the middle of its downstream's left side.
func lineageEdges(t *testing.T, doc *goquery.Document) map[string]string {
	t.Helper()
	nodes := lineageNodes(t, doc)
	at := func(x, y int, right bool) string {
		for _, n := range nodes {
			if (right && x == n.X+n.W || !right && x == n.X) && y == n.Y+12 {
				return n.Key
			}
		}
		return fmt.Sprintf("(none at %d,%d)", x, y)
	}
	out := map[string]string{}
	doc.Find(`[data-testid="lineage-svg"] g[data-mapping] path`).Each(func(_ int, s *goquery.Selection) {
		d := s.AttrOr("d", "")
		var ns []int
		for _, m := range pathNums.FindAllString(d, -1) {
			v, _ := strconv.Atoi(m)
			ns = append(ns, v)
		}
		if len(ns) < 3 {
			t.Fatalf("edge path %q", d)
		}
		ex, ey := ns[len(ns)-2], ns[len(ns)-1]
		if i := strings.LastIndexAny(d, "CH"); d[i] == 'H' {
			ex, ey = ns[len(ns)-1], ns[1]
		}
		out[at(ns[0], ns[1], true)+">"+at(ex, ey, false)] = s.Parent().AttrOr("data-mapping", "")
	})
	return out
}

// lineageWorkspace: a daily source read by a daily asset (identity), a
// monthly rollup of that (time window), a static asset reading all of the
// source (all), a chain on to e, and an asset on its own.
var lineageWorkspace = testkit.Assets(
	testkit.Asset("a.src", testkit.Daily),
	testkit.Asset("b.same_day", testkit.Daily, "deps: [a.src]"),
	testkit.Asset("c.month", "{monthly: {start: 2025-01-01}}", "deps: [b.same_day]"),
	testkit.Asset("d.everything", "{static: [x, y]}", "deps: [{asset: a.src, mapping: all}]"),
	testkit.Asset("e.after_month", "{monthly: {start: 2025-01-01}}", "deps: [c.month]"),
	testkit.Asset("f.alone", testkit.Daily),
)

// TestLineageOverviewGraph: the overview loads the whole graph from
// /lineage (a link without JavaScript); it has a node per asset, each a link
// to the asset's page titled with its key and health, and an edge per
// dependency styled by its resolved mapping (auto resolves to identity or
// time_window; all stays all); with nothing materialized every node reads
// "never materialized". Asked by htmx, /lineage answers the graph alone;
// otherwise a page of its own.
func TestLineageOverviewGraph(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: lineageWorkspace})
	_, overview := get(t, env, "/")
	slot := overview.Find(`[data-testid="lineage-slot"]`)
	if slot.AttrOr("hx-get", "") != "/lineage" || slot.AttrOr("hx-trigger", "") != "load" || slot.Find(`a[href="/lineage"]`).Length() != 1 {
		t.Fatalf("the overview's lineage slot: %s", must(slot.Html()))
	}
	status, doc := get(t, env, "/lineage")
	if status != http.StatusOK || doc.Find(`main [data-testid="lineage"]`).Length() != 1 || doc.Find(`[data-testid="lineage-back"]`).AttrOr("href", "") != "/" {
		t.Fatalf("the lineage page: status %d, %d graphs in main", status, doc.Find(`main [data-testid="lineage"]`).Length())
	}
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/lineage", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken())
	req.Header.Set("HX-Request", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err = goquery.NewDocumentFromReader(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || doc.Find("main, header").Length() != 0 || doc.Find(`[data-testid="lineage-svg"]`).Length() != 1 {
		t.Fatalf("/lineage for htmx: %d, %d frames, %d graphs (%v)", resp.StatusCode, doc.Find("main, header").Length(), doc.Find(`[data-testid="lineage-svg"]`).Length(), err)
	}
	if href := doc.Find(`[data-testid="lineage-page-link"]`).AttrOr("href", ""); href != "/lineage" {
		t.Errorf("the overview's graph links its own page as %q", href)
	}
	keys := lineageKeys(t, doc)
	slices.Sort(keys)
	if want := []string{"a.src", "b.same_day", "c.month", "d.everything", "e.after_month", "f.alone"}; !slices.Equal(keys, want) {
		t.Fatalf("nodes %v, want %v", keys, want)
	}
	for _, n := range lineageNodes(t, doc) {
		if n.Title != n.Key+": never materialized" {
			t.Errorf("node %s is titled %q", n.Key, n.Title)
		}
		if n.Health != "missing" {
			t.Errorf("node %s: class %q", n.Key, n.Class)
		}
	}
	want := map[string]string{
		"a.src>b.same_day":      "identity",
		"b.same_day>c.month":    "time_window",
		"a.src>d.everything":    "all",
		"c.month>e.after_month": "identity",
	}
	if got := lineageEdges(t, doc); !maps.Equal(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	if c := doc.Find(`[data-testid="lineage-caption"]`).Text(); c != "6 assets" {
		t.Errorf("caption %q", c)
	}
	if doc.Find(`[data-testid="lineage-legend"] li`).Length() != 9 {
		t.Errorf("the legend has %d entries, want 6 healths and 3 mappings", doc.Find(`[data-testid="lineage-legend"] li`).Length())
	}
}

// TestLineageAssetPageNeighbourhood: an asset page draws the asset (marked)
// and the assets within two steps up- and downstream, not further and not
// unrelated ones.
func TestLineageAssetPageNeighbourhood(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: lineageWorkspace})
	for _, c := range []struct {
		asset string
		want  []string
	}{
		{"c.month", []string{"a.src", "b.same_day", "c.month", "e.after_month"}},
		{"a.src", []string{"a.src", "b.same_day", "c.month", "d.everything"}},
		{"e.after_month", []string{"b.same_day", "c.month", "e.after_month"}},
		{"f.alone", []string{"f.alone"}},
	} {
		status, doc := get(t, env, "/assets/"+c.asset)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d", c.asset, status)
		}
		keys := lineageKeys(t, doc)
		slices.Sort(keys)
		if !slices.Equal(keys, c.want) {
			t.Errorf("%s: graph of %v, want %v", c.asset, keys, c.want)
		}
		var cur []string
		for _, n := range lineageNodes(t, doc) {
			if strings.Contains(" "+n.Class+" ", " cur ") {
				cur = append(cur, n.Key)
			}
		}
		if !slices.Equal(cur, []string{c.asset}) {
			t.Errorf("%s: marked %v", c.asset, cur)
		}
	}
}

// TestLineageHealthFromSeed: on the seeded demo each node's health is its
// row's: failed where the row counts failed partitions, stale where it
// counts stale ones and no failed, never a colour the row does not count.
func TestLineageHealthFromSeed(t *testing.T) {
	env := seededEnv(t)
	_, doc := get(t, env, "/")
	_, graph := get(t, env, "/lineage")
	health := map[string]string{}
	for _, n := range lineageNodes(t, graph) {
		health[n.Key] = n.Health
	}
	seen := map[string]bool{}
	doc.Find(`[data-testid="asset-row"]`).Each(func(_ int, row *goquery.Selection) {
		k := row.AttrOr("data-asset", "")
		n := func(s string) bool {
			txt := strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, row.Find(`[data-testid="asset-count-`+s+`"]`).Text())
			return txt != "" && strings.Trim(txt, "0") != ""
		}
		want := "other"
		switch {
		case n("failed"):
			want = "failed"
		case n("in_progress"):
			want = "running"
		case n("stale"):
			want = "stale"
		}
		got := health[k]
		seen[got] = true
		if want != "other" && got != want || want == "other" && (got == "failed" || got == "running" || got == "stale") {
			t.Errorf("%s: node reads %q, its row %s", k, got, want)
		}
	})
	if !seen["failed"] || !seen["stale"] {
		t.Errorf("the seeded demo should show failed and stale nodes: %v", seen)
	}
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}
