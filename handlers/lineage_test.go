package handlers_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/testkit"
)

// lineageKeys is the assets of the lineage graph in doc, in drawing order.
func lineageKeys(doc *goquery.Document) []string {
	var keys []string
	doc.Find(`[data-testid="lineage-node"]`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, s.AttrOr("data-asset", ""))
	})
	return keys
}

// lineageEdges is each edge of the graph in doc as "from>to" with its
// class (its mapping's style).
func lineageEdges(doc *goquery.Document) map[string]string {
	out := map[string]string{}
	doc.Find(`[data-testid="lineage-edge"]`).Each(func(_ int, s *goquery.Selection) {
		out[s.AttrOr("data-from", "")+">"+s.AttrOr("data-to", "")] = s.AttrOr("class", "")
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

// TestLineageOverviewGraph: the overview's graph has a node per asset, each
// a link to the asset's page titled with its key and health, and an edge per
// dependency styled by its resolved mapping (auto resolves to identity or
// time_window; all stays all); with nothing materialized every node reads
// "never materialized".
func TestLineageOverviewGraph(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: lineageWorkspace})
	status, doc := get(t, env, "/")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	keys := lineageKeys(doc)
	slices.Sort(keys)
	if want := []string{"a.src", "b.same_day", "c.month", "d.everything", "e.after_month", "f.alone"}; !slices.Equal(keys, want) {
		t.Fatalf("nodes %v, want %v", keys, want)
	}
	doc.Find(`[data-testid="lineage-node"]`).Each(func(_ int, s *goquery.Selection) {
		k := s.AttrOr("data-asset", "")
		if s.Is("a") == false || s.AttrOr("href", "") != "/assets/"+k {
			t.Errorf("node %s links to %q", k, s.AttrOr("href", ""))
		}
		if title := s.Find("title").Text(); title != k+": never materialized" {
			t.Errorf("node %s is titled %q", k, title)
		}
		if s.AttrOr("data-health", "") != "missing" || !strings.Contains(s.AttrOr("class", ""), "h-missing") {
			t.Errorf("node %s: health %q, class %q", k, s.AttrOr("data-health", ""), s.AttrOr("class", ""))
		}
	})
	want := map[string]string{
		"a.src>b.same_day":      "e e-identity",
		"b.same_day>c.month":    "e e-time_window",
		"a.src>d.everything":    "e e-all",
		"c.month>e.after_month": "e e-identity",
	}
	if got := lineageEdges(doc); !maps(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	if c := doc.Find(`[data-testid="lineage-caption"]`).Text(); c != "6 assets" {
		t.Errorf("caption %q", c)
	}
	if doc.Find(`[data-testid="lineage-legend"] li`).Length() != 9 {
		t.Errorf("the legend has %d entries, want 6 healths and 3 mappings", doc.Find(`[data-testid="lineage-legend"] li`).Length())
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
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
		keys := lineageKeys(doc)
		slices.Sort(keys)
		if !slices.Equal(keys, c.want) {
			t.Errorf("%s: graph of %v, want %v", c.asset, keys, c.want)
		}
		cur := doc.Find(`[data-testid="lineage-node"].cur`)
		if cur.Length() != 1 || cur.AttrOr("data-asset", "") != c.asset {
			t.Errorf("%s: marked %d nodes (%q)", c.asset, cur.Length(), cur.AttrOr("data-asset", ""))
		}
	}
}

// TestLineageHealthFromSeed: on the seeded demo each node's health is its
// row's: failed where the row counts failed partitions, stale where it
// counts stale ones and no failed, never a colour the row does not count.
func TestLineageHealthFromSeed(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	_, doc := get(t, env, "/")
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
		got := doc.Find(`[data-testid="lineage-node"][data-asset="`+k+`"]`).AttrOr("data-health", "")
		seen[got] = true
		if want != "other" && got != want || want == "other" && (got == "failed" || got == "running" || got == "stale") {
			t.Errorf("%s: node reads %q, its row %s", k, got, want)
		}
	})
	if !seen["failed"] || !seen["stale"] {
		t.Errorf("the seeded demo should show failed and stale nodes: %v", seen)
	}
}
