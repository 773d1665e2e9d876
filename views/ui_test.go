package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// doc renders c and parses it.
func doc(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	d, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func bar(n ...int64) Bar {
	b := Bar{}
	for i, k := range n {
		b.Segs = append(b.Segs, Seg{Status: []string{"materialized", "failed", "missing"}[i%3], N: k})
		b.Total += k
	}
	return b
}

// The strip's caption counts what it draws: merged bars (not "runs",
// which are job runs elsewhere), the longest one's true size, singular and
// plural right, in the strip's unit.
func TestStripCaptionCountsStretches(t *testing.T) {
	cases := []struct {
		g    Grid
		want string
	}{
		{Grid{Mode: "buckets", Total: 556, BucketSize: 139, Buckets: []Bucket{
			{Bar: bar(139), Span: 1}, {Bar: bar(278), Span: 2}, {Bar: bar(100, 39), Span: 1}}},
			"556 partitions drawn as 3 bars, the longest 278 partitions. Click a bar to zoom in."},
		{Grid{Mode: "buckets", Total: 96, BucketSize: 3, Buckets: []Bucket{{Bar: bar(96), Span: 32}}},
			"96 partitions drawn as 1 bar. Click it to zoom in."},
		{Grid{Mode: "buckets", Total: 1, BucketSize: 1, Buckets: []Bucket{{Bar: bar(1), Span: 1}}},
			"1 partition drawn as 1 bar. Click it to zoom in."},
		{Grid{Mode: "buckets", Unit: "chunk", Total: 543, BucketSize: 5, Buckets: []Bucket{
			{Bar: bar(5), Span: 1}, {Bar: bar(3), Span: 1}}},
			"543 chunks drawn as 2 bars, the longest 5 chunks. Click a bar to list its chunks."},
	}
	for _, c := range cases {
		d := doc(t, BucketStrip(c.g, "history"))
		if got := text(d.Find(`[data-testid="history-caption"]`)); got != c.want {
			t.Errorf("caption %q, want %q", got, c.want)
		}
		if got := d.Find(`svg[data-testid="history"]`).AttrOr("aria-label", ""); got != c.want {
			t.Errorf("strip label %q, want %q", got, c.want)
		}
	}
}

// Bars scale with their box (a viewBox, stretched horizontally, when CSS
// shrinks them below their design width) instead of being cropped, so that
// every segment stays visible.
func TestBarsScale(t *testing.T) {
	for name, c := range map[string]templ.Component{
		"health-bar":   HealthBar(bar(16290, 208, 84), 220),
		"progress-bar": ProgressBar(bar(58, 0, 38), 220),
	} {
		svg := doc(t, c).Find(`svg[data-testid="` + name + `"]`)
		if svg.AttrOr("viewBox", "") != "0 0 220 12" || svg.AttrOr("width", "") != "220" || svg.AttrOr("preserveAspectRatio", "") != "none" {
			h, _ := goquery.OuterHtml(svg)
			t.Errorf("%s does not scale: %s", name, h)
		}
	}
}

// Nobody signed in (the sign-in page, a 401): no nav to pages that need a
// sign-in. Signed in, or anonymous-viewer mode: the nav.
func TestNavOnlyForReaders(t *testing.T) {
	for _, c := range []struct {
		p    Page
		want int
	}{
		{Page{Title: "Sign in", Nav: "login"}, 0},
		{Page{Title: "Sign in required"}, 0},
		{Page{Title: "Assets", Nav: "overview", User: "vic", Role: "viewer"}, 1},
		{Page{Title: "Assets", Nav: "overview", Browse: true}, 1},
	} {
		d := doc(t, Error(c.p, ErrorPage{Title: "x"}))
		if n := d.Find(`nav[aria-label="Main"]`).Length(); n != c.want {
			t.Errorf("%+v: %d main navs, want %d", c.p, n, c.want)
		}
	}
}

// The reset-password box says what it is: placeholder and accessible name.
func TestResetPasswordBoxLabelled(t *testing.T) {
	v := AdminUsersView{Users: []UserRow{{ID: 1, Name: "vic", Role: "viewer"}}, Roles: []string{"viewer"}, MinPass: 10}
	in := doc(t, AdminUsersPage(Page{User: "admin", Role: "admin"}, v)).Find(`[data-user="vic"] input[name="password"]`)
	if in.AttrOr("placeholder", "") == "" || in.AttrOr("aria-label", "") != "New password for vic" {
		h, _ := goquery.OuterHtml(in)
		t.Fatalf("unlabelled password box: %s", h)
	}
}

// A partition's staleness reads in words; the API code is only a tooltip.
func TestStalenessReasonInWords(t *testing.T) {
	d := doc(t, StalenessBlock(StalenessView{Reason: ReasonNever, Evidence: "never materialized: the last attempt failed"}))
	if strings.Contains(text(d.Find("body")), "NEVER_MATERIALIZED") {
		t.Fatalf("raw reason code shown: %q", text(d.Find("body")))
	}
	badge := d.Find(`[data-testid="stale-reason"]`)
	// The tooltip's element is focusable: a keyboard reaches it.
	if !strings.HasSuffix(text(badge), "Never materialized") || !strings.Contains(badge.AttrOr("title", ""), "NEVER_MATERIALIZED") || badge.AttrOr("tabindex", "") != "0" {
		t.Fatalf("badge %q title %q", text(badge), badge.AttrOr("title", ""))
	}
}

// An untitled backfill is named by its id once, not twice.
func TestBackfillTableIDOnce(t *testing.T) {
	rows := []BackfillRow{
		{ID: "bf_1", Title: "Backfill bf_1", State: "SUCCEEDED", Progress: bar(1)},
		{ID: "bf_2", Title: "Audit backfill nov 1-4", State: "SUCCEEDED", Progress: bar(1)},
	}
	d := doc(t, BackfillTable(rows))
	if n := strings.Count(text(d.Find(`[data-id="bf_1"] td`).First()), "bf_1"); n != 1 {
		t.Errorf("untitled backfill shows its id %d times", n)
	}
	if got := text(d.Find(`[data-id="bf_2"] [data-testid="backfill-id"]`)); got != "bf_2" {
		t.Errorf("titled backfill's id %q", got)
	}
}

// The new-backfill breadcrumb has no dangling separator.
func TestNewBackfillCrumbs(t *testing.T) {
	d := doc(t, BackfillNewPage(Page{User: "op", Role: "operator"}, NewBackfillForm{Errors: map[string]string{}}))
	if got := text(d.Find(`main .crumbs`)); got != "Backfills" {
		t.Fatalf("breadcrumb %q", got)
	}
}

// Column headers wider than a column (month names) are set upright, one
// column wide; two-character ones (hours, days) stay as they are. A matrix
// names its larger periods (months) in a row above. Row labels carry a
// tooltip, in case the narrow layout shortens them.
func TestGridHeaders(t *testing.T) {
	g := Grid{Mode: "matrix", Columns: 3, ColumnLabels: []string{"30", "1", "2"}, ColumnGroups: []ColumnGroup{{Col: 1, Label: "Nov 2026"}},
		Rows: []GridRow{{Label: "eu", Tiles: []Tile{{Key: "k", Status: "missing", Href: "/x", Col: 1}}}}}
	d := doc(t, GridView(g, "grid"))
	if d.Find(`[data-testid="grid-head"]`).HasClass("gh-long") {
		t.Errorf("matrix day headers upright")
	}
	if got := d.Find(`[data-testid="grid-groups"] span:not(.rl)`).Text(); got != "Nov 2026" {
		t.Errorf("matrix group row %q", got)
	}
	if d.Find(`.rl[title="eu"]`).Length() != 1 {
		t.Errorf("row label without title")
	}
	g = Grid{Mode: "calendar", Columns: 3, ColumnLabels: []string{"Jan", "Feb", "Mar"}, Rows: g.Rows}
	if !doc(t, GridView(g, "grid")).Find(`[data-testid="grid-head"]`).HasClass("gh-long") {
		t.Errorf("month headers not upright")
	}
	g.ColumnLabels = []string{"00", "01", "02"}
	if doc(t, GridView(g, "grid")).Find(`[data-testid="grid-head"]`).HasClass("gh-long") {
		t.Errorf("hour headers upright")
	}
}

// On the overview, a long asset key may wrap after a dot (at 390 px the
// table fits), never inside a word, and reads and copies as itself.
func TestOverviewKeyWrapsAtDots(t *testing.T) {
	o := Overview{Groups: []GroupSummary{{Name: "analytics", Assets: []AssetSummary{{Key: "analytics.monthly_revenue", Href: "/assets/analytics.monthly_revenue", Health: bar(1)}}}}}
	d := doc(t, OverviewPage(Page{User: "vic", Role: "viewer"}, o))
	a := d.Find(`[data-asset="analytics.monthly_revenue"] td a`).First()
	h, _ := a.Html()
	if a.Text() != "analytics.monthly_revenue" || h != "analytics.<wbr/>monthly_revenue" {
		t.Fatalf("asset link %q (%s)", a.Text(), h)
	}
	if d.Find(`.scroll > table.assets`).Length() != 1 {
		t.Fatalf("the asset table scrolls with the page")
	}
}
