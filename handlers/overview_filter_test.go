package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/testkit"
)

// listed is the overview's asset rows in doc, in order.
func listed(doc *goquery.Document) []string {
	var keys []string
	doc.Find(`[data-testid="asset-row"]`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, s.AttrOr("data-asset", ""))
	})
	return keys
}

// rowCounts is, for each asset row of doc, whether it counts any partition
// of status s (its asset-count-s figure is not 0).
func rowCounts(doc *goquery.Document, s string) map[string]bool {
	out := map[string]bool{}
	doc.Find(`[data-testid="asset-row"]`).Each(func(_ int, row *goquery.Selection) {
		txt := strings.Trim(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, row.Find(`[data-testid="asset-count-`+s+`"]`).Text()), "0")
		out[row.AttrOr("data-asset", "")] = txt != ""
	})
	return out
}

// TestOverviewFilter (issue 24, item 7): the overview's query parameters
// filter its list, without JavaScript: q by a part of the name in any case,
// group by group, state by what the rows count (failed, stale, running);
// they combine; the form shows what was asked for; the count says how many
// of all are shown; a filter that keeps nothing says so; the lineage graph
// keeps every asset and dims the ones left out.
func TestOverviewFilter(t *testing.T) {
	env := seededEnv(t)
	_, all := get(t, env, "/")
	every := listed(all)
	if len(every) != len(env.WS.Assets) {
		t.Fatalf("unfiltered overview lists %d of %d assets", len(every), len(env.WS.Assets))
	}
	if all.Find(`[data-testid="asset-filter-count"]`).Length() != 0 {
		t.Error("the unfiltered overview counts what it shows")
	}
	withStatus := func(s string) []string {
		var keys []string
		counts := rowCounts(all, s)
		for _, k := range every {
			if counts[k] {
				keys = append(keys, k)
			}
		}
		return keys
	}
	failed, stale, running := withStatus("failed"), withStatus("stale"), withStatus("in_progress")
	if len(failed) == 0 || len(failed) == len(every) || len(stale) == 0 || len(running) != 0 {
		t.Fatalf("the seed should have some failed, some stale, nothing running: %v %v %v", failed, stale, running)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"q=daily", []string{"analytics.daily_events"}},
		{"q=DAILY", []string{"analytics.daily_events"}},
		{"q=+events+", []string{"raw.events", "analytics.daily_events"}},
		{"group=analytics", []string{"analytics.daily_events", "analytics.monthly_revenue"}},
		{"state=failed", failed},
		{"state=stale", stale},
		{"state=running", nil},
		{"q=analytics&state=failed", intersect(failed, []string{"analytics.daily_events", "analytics.monthly_revenue"})},
		{"q=events&group=ingestion", []string{"raw.events"}},
		{"q=nothing-has-this", nil},
		{"q=&group=&state=", every},
	} {
		status, doc := get(t, env, "/?"+c.query)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d", c.query, status)
		}
		if got := listed(doc); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v, want %v", c.query, got, c.want)
		}
		q, _ := url.ParseQuery(c.query)
		if v := doc.Find(`[data-testid="asset-filter-q"]`).AttrOr("value", ""); v != strings.TrimSpace(q.Get("q")) {
			t.Errorf("%s: the field holds %q", c.query, v)
		}
		if v := doc.Find(`[data-testid="asset-filter-state"] option[selected]`).AttrOr("value", ""); v != q.Get("state") {
			t.Errorf("%s: state %q chosen", c.query, v)
		}
		if v := doc.Find(`[data-testid="asset-filter-group"] option[selected]`).AttrOr("value", ""); v != q.Get("group") {
			t.Errorf("%s: group %q chosen", c.query, v)
		}
		active := q.Get("q") != "" || q.Get("group") != "" || q.Get("state") != ""
		count := doc.Find(`[data-testid="asset-filter-count"]`)
		if active != (count.Length() == 1) {
			t.Errorf("%s: %d counts", c.query, count.Length())
		}
		if active && !strings.HasPrefix(strings.Join(strings.Fields(count.Text()), " "), "Showing "+itoa(len(c.want))+" of "+itoa(len(every))+" assets.") {
			t.Errorf("%s: count reads %q", c.query, count.Text())
		}
		if none := doc.Find(`[data-testid="asset-filter-none"]`).Length() == 1; none != (len(c.want) == 0) {
			t.Errorf("%s: 'no asset matches' shown %v with %d rows", c.query, none, len(c.want))
		}
		wantHref := "/lineage"
		if active {
			wantHref += "?" + lineageQuery(q)
		}
		if href := doc.Find(`[data-testid="lineage-slot"]`).AttrOr("hx-get", ""); href != wantHref {
			t.Errorf("%s: the graph is loaded from %q, want %q", c.query, href, wantHref)
		}
		_, graph := get(t, env, wantHref)
		if n := len(lineageKeys(t, graph)); n != len(every) {
			t.Errorf("%s: the graph draws %d of %d assets", c.query, n, len(every))
		}
		var lit []string
		for _, n := range lineageNodes(t, graph) {
			if !strings.Contains(" "+n.Class+" ", " dim ") {
				lit = append(lit, n.Key)
			}
		}
		if !active {
			if len(lit) != len(every) {
				t.Errorf("%s: unfiltered graph dims %d assets", c.query, len(every)-len(lit))
			}
		} else if !sameSet(lit, c.want) {
			t.Errorf("%s: graph leaves %v undimmed, want %v", c.query, lit, c.want)
		}
	}
	// The groups offered are the workspace's, in order of appearance.
	var groups []string
	all.Find(`[data-testid="asset-filter-group"] option`).Each(func(_ int, s *goquery.Selection) { groups = append(groups, s.AttrOr("value", "")) })
	if want := []string{"", "ingestion", "analytics", "ml", "crm", "partners"}; !slices.Equal(groups, want) {
		t.Errorf("groups offered %v, want %v", groups, want)
	}
}

// TestOverviewFilterBadInput: an unknown state or group, or a name filter
// too long, is a 400 that says what is wrong and what to use: on the
// overview beside its filter (every asset listed), on /lineage its error
// page.
func TestOverviewFilterBadInput(t *testing.T) {
	env := seededEnv(t)
	for _, c := range []struct{ query, want string }{
		{"state=broken", `unknown state "broken"; use failed (Has failures), stale or running`},
		{"state=FAILED", `unknown state "FAILED"; use failed (Has failures), stale or running`},
		{"group=nope", `unknown group "nope"; use one of ingestion, analytics, ml, crm, partners`},
		{"q=" + strings.Repeat("x", 201), "the name filter is 201 characters long; use at most 200"},
	} {
		for _, path := range []string{"/?", "/lineage?"} {
			status, doc := get(t, env, path+c.query)
			msg := doc.Find(`[data-testid="error-message"]`).Text()
			if path == "/?" {
				msg = doc.Find(`[data-testid="asset-filter-error"]`).Text()
				if n := doc.Find(`[data-testid="asset-row"], tr[data-asset]`).Length(); n != 6 {
					t.Errorf("%s%s: %d assets listed beside the error, want all 6", path, c.query, n)
				}
			}
			if status != http.StatusBadRequest || !strings.Contains(msg, c.want) {
				t.Errorf("%s%s: %d %q, want 400 saying %q", path, c.query, status, msg, c.want)
			}
		}
	}
}

// lineageQuery is q without its empty values, trimmed as the filter trims.
func lineageQuery(q url.Values) string {
	out := url.Values{}
	for k, vs := range q {
		if v := strings.TrimSpace(vs[0]); v != "" {
			out.Set(k, v)
		}
	}
	return out.Encode()
}

func intersect(a, b []string) []string {
	var out []string
	for _, k := range a {
		if slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOverviewListPages: a workspace of more assets than a page lists them
// a page at a time (200), saying which and linking the pages around;
// filtered, it pages what matches; a page that is not a number, or past the
// last, is a 400.
func TestOverviewListPages(t *testing.T) {
	t.Parallel()
	var assets []string
	for i := range 450 {
		assets = append(assets, testkit.Asset(fmt.Sprintf("g%d.a%03d", i%3, i), "{static: [x]}", fmt.Sprintf("group: g%d", i%3)))
	}
	env := testkit.New(t, testkit.Options{WorkspaceYAML: testkit.Assets(assets...)})
	for _, c := range []struct {
		query      string
		rows       int
		count      string
		prev, next string
	}{
		{"", 200, "Showing 1–200 of 450 assets.", "", "/?page=2"},
		{"page=2", 200, "Showing 201–400 of 450 assets.", "/", "/?page=3"},
		{"page=3", 50, "Showing 401–450 of 450 assets.", "/?page=2", ""},
		{"group=g1", 150, "Showing 150 of 450 assets.", "", ""},
		{"q=a&page=2", 200, "Showing 201–400 of 450 matching assets (450 in all).", "/?q=a", "/?page=3&q=a"},
	} {
		status, doc := get(t, env, "/?"+c.query)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d", c.query, status)
		}
		if n := len(listed(doc)); n != c.rows {
			t.Errorf("%s: %d rows, want %d", c.query, n, c.rows)
		}
		count := strings.Join(strings.Fields(doc.Find(`[data-testid="asset-filter-count"]`).Text()), " ")
		if !strings.HasPrefix(count, c.count) {
			t.Errorf("%s: count %q, want %q", c.query, count, c.count)
		}
		if p := doc.Find(`[data-testid="asset-page-prev"]`).AttrOr("href", ""); p != c.prev {
			t.Errorf("%s: previous %q, want %q", c.query, p, c.prev)
		}
		if n := doc.Find(`[data-testid="asset-page-next"]`).AttrOr("href", ""); n != c.next {
			t.Errorf("%s: next %q, want %q", c.query, n, c.next)
		}
	}
	for _, c := range []struct{ query, want string }{
		{"page=0", `page "0" is not a page number; use 1 or more`},
		{"page=two", `page "two" is not a page number; use 1 or more`},
		{"page=4", "page 4 is past the last page of this list (3)"},
		{"group=g1&page=2", "page 2 is past the last page of this list (1)"},
	} {
		status, doc := get(t, env, "/?"+c.query)
		// A page that is no number is shown beside the filter; one past the
		// end on the error page.
		msg := doc.Find(`[data-testid="error-message"]`).Text() + doc.Find(`[data-testid="asset-filter-error"]`).Text()
		if status != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", c.query, status, msg, c.want)
		}
	}
}
