package handlers_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// selWorkspace is a small daily × region asset: 9 days (the end is
// exclusive) × 3 regions.
const selWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  t.multi:
    partitions:
      multi:
        date: {daily: {start: "2025-01-01", end: "2025-01-10"}}
        region: {static: [eu, us, apac]}
    code_version: v1
    executor: {demo: {duration: 5ms}}
`

// TestSelectionCountReadsTheDimensionFilter: the asset grid's selection bar
// counts its "Only (name=value)" filter as the new-backfill form it opens
// previews it, and refuses an unknown dimension or value with the form's
// message (it used to ignore the filter: 6 selected, a preview of 2).
func TestSelectionCountReadsTheDimensionFilter(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, selWorkspace, false)
	c := env.Client(t, auth.RoleOperator)
	count := func(q url.Values) (n, msg string) {
		t.Helper()
		_, doc := pgGet(t, env, c, "/backfills/selection?"+q.Encode())
		return doc.Find(`[data-testid="selection-n"]`).AttrOr("data-n", ""), strings.TrimSpace(doc.Find(`[data-testid="selection-error"]`).Text())
	}
	csrf := env.CSRF(t, c)
	// form is the new-backfill form's live preview of the same fields.
	form := func(q url.Values) (n, msg string) {
		t.Helper()
		f := url.Values{"_csrf": {csrf}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
		for k, v := range q {
			f[k] = v
		}
		_, doc := pgLivePreview(t, env, c, f)
		return doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""), strings.TrimSpace(doc.Find(`[data-testid="preview-error"]`).Text())
	}
	cases := []struct {
		name, start, end, dim string
		want                  string // the count; "" when refused
	}{
		{"range and region", "2025-01-02|us", "2025-01-04|eu", "region=eu", "2"},
		{"region alone", "", "", "region=eu", "9"},
		{"spaces around", "", "", " region = apac ", "9"},
		{"range alone", "2025-01-02|us", "2025-01-04|eu", "", "6"},
		{"unknown dimension", "", "", "zone=xx", ""},
		{"unknown value", "", "", "region=mars", ""},
		{"not name=value", "", "", "region", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"asset": {"t.multi"}, "select_mode": {"1"}, "start": {tc.start}, "end": {tc.end}, "dimension": {tc.dim}}
			n, msg := count(q)
			fn, fmsg := form(q)
			if tc.want != "" {
				if n != tc.want || msg != "" {
					t.Fatalf("count %q (error %q), want %s", n, msg, tc.want)
				}
				if fn != n {
					t.Errorf("the bar counts %s, the form it opens previews %s", n, fn)
				}
				return
			}
			if n != "" || msg == "" {
				t.Fatalf("count %q with no message, want a refusal", n)
			}
			if msg != fmsg {
				t.Errorf("the bar says %q, the form says %q", msg, fmsg)
			}
		})
	}
}

// longWorkspace is a daily asset longer than the grid's tile limit, so that
// its page shows a window of it (by default 2022-05-01 … 2024-12-31: the
// newest whole months that fit in 1,000 tiles).
var longWorkspace = `defaults:
  retries: {max_attempts: 1}
` + testkit.Assets(
	testkit.Asset("t.long", `{daily: {start: "2020-01-01", end: "2025-01-01"}}`, "code_version: v1", "executor: {demo: {duration: 5ms}}"),
)

// barQuery is the query the selection bar's form submits as it stands
// (its text and hidden inputs, and its checkboxes that are ticked).
func barQuery(bar *goquery.Selection) url.Values {
	q := url.Values{}
	bar.Find("input[name]").Each(func(_ int, in *goquery.Selection) {
		typ := in.AttrOr("type", "text")
		if (typ == "checkbox" || typ == "radio") && in.AttrOr("checked", "-") == "-" {
			return
		}
		q.Add(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	return q
}

// TestSelectionBarStartsWithTheWindowShown: with nothing selected on the
// grid, "Backfill…" preselects the window the page shows (not the asset's
// whole history), and on a grid filtered on failed or missing the form's
// "only missing and failed" too; its tooltip says so.
func TestSelectionBarStartsWithTheWindowShown(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, longWorkspace, false)
	record(t, env, "t.long", "2024-06-01", db.StatusFailed, "v1", T0)
	record(t, env, "t.long", "2024-06-02", db.StatusMaterialized, "v1", T0)
	record(t, env, "t.long", "2024-06-03", db.StatusMaterialized, "v1", T0)
	record(t, env, "t.long", "2021-01-01", db.StatusFailed, "v1", T0) // outside the window
	c := env.Client(t, auth.RoleOperator)
	const first, last, window = "2022-05-01", "2024-12-31", 976
	cases := []struct {
		query       string
		onlyMissing bool
		want        int // partitions the new-backfill form previews
	}{
		{"", false, window},
		{"?status=failed", true, window - 2},
		{"?status=missing", true, window - 2},
		{"?status=materialized", false, window},
		{"?view=staleness", false, window},
		{"?from=2024-06-01&to=2024-06-10", false, 10},
		{"?from=2024-06-01&to=2024-06-10&status=failed", true, 8},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			_, doc := pgGet(t, env, c, "/assets/t.long"+tc.query)
			bar := doc.Find(`form[data-testid="selection-bar"]`)
			if bar.Length() != 1 {
				t.Fatal("no selection bar")
			}
			q := barQuery(bar)
			wantFirst, wantLast := first, last
			if strings.Contains(tc.query, "from=") {
				wantFirst, wantLast = "2024-06-01", "2024-06-10"
			}
			if q.Get("start") != wantFirst || q.Get("end") != wantLast {
				t.Errorf("the bar holds %q … %q, want the window shown, %s … %s", q.Get("start"), q.Get("end"), wantFirst, wantLast)
			}
			if got := q.Get("selector") == "missing_failed"; got != tc.onlyMissing {
				t.Errorf("only missing and failed: %v, want %v", got, tc.onlyMissing)
			}
			title := bar.Find(`[data-testid="backfill-selection"]`).AttrOr("title", "")
			if !strings.Contains(title, wantFirst+" … "+wantLast) || strings.Contains(title, "missing and failed") != tc.onlyMissing {
				t.Errorf("Backfill… says %q", title)
			}
			// Backfill… opens the form with that selection.
			_, form := pgGet(t, env, c, "/backfills/new?"+q.Encode())
			if got := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); got != strconv.Itoa(tc.want) {
				t.Errorf("the form previews %q partitions, want %d (%s)", got, tc.want, strings.TrimSpace(form.Find(`[data-testid="preview-error"]`).Text()))
			}
			wantRadio := "range"
			if tc.onlyMissing {
				wantRadio = "statuses" // missing and failed ticked
			}
			if got := form.Find(`input[name="selector"][checked]`).AttrOr("value", ""); got != wantRadio {
				t.Errorf("the form's selection is %q, want %q", got, wantRadio)
			}
			// And the bar counts what the form previews.
			_, cnt := pgGet(t, env, c, "/backfills/selection?"+q.Encode())
			if got := cnt.Find(`[data-testid="selection-n"]`).AttrOr("data-n", ""); got != strconv.Itoa(tc.want) {
				t.Errorf("the bar counts %q, want %d", got, tc.want)
			}
		})
	}
}

// TestZoomOutNeverZoomsIn: "Zoom out" widens the window up to the whole
// history and is not offered once the page shows all of it (it used to link
// to the page without a range, the default window of 976 days).
func TestZoomOutNeverZoomsIn(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, longWorkspace, false)
	c := env.Client(t, auth.RoleViewer)
	cases := []struct{ from, to, want string }{
		{"2020-01-01", "2024-12-31", ""}, // the whole history
		{"2022-01-01", "2024-12-31", "?from=2020-01-01&to=2024-12-31"},
		{"2020-01-01", "2022-12-31", "?from=2020-01-01&to=2024-12-31"},
		{"2024-06-01", "2024-06-10", "?from=2024-05-22&to=2024-06-20"},
		{"2024-12-20", "2024-12-31", "?from=2024-12-08&to=2024-12-31"},
	}
	for _, tc := range cases {
		t.Run(tc.from+".."+tc.to, func(t *testing.T) {
			_, doc := pgGet(t, env, c, "/assets/t.long?from="+tc.from+"&to="+tc.to)
			z := doc.Find(`[data-testid="zoom-out"]`)
			if tc.want == "" {
				if z.Length() != 0 {
					t.Fatalf("the whole history offers Zoom out to %q", z.AttrOr("href", ""))
				}
				return
			}
			if got := z.AttrOr("href", ""); got != tc.want {
				t.Errorf("Zoom out links to %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSelectOnTheGridOnlyWithTiles: a window too large for tiles is a
// bucket strip, with nothing to click: the bar then offers no "Select on
// the grid" but says why, and how to get tiles.
func TestSelectOnTheGridOnlyWithTiles(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, longWorkspace, false)
	c := env.Client(t, auth.RoleOperator)
	for _, tc := range []struct {
		query string
		tiles bool
	}{
		{"", true},
		{"?from=2024-06-01&to=2024-06-10", true},
		{"?from=2020-01-01&to=2024-12-31", false},
		{"?from=2021-01-01&to=2024-12-31&status=failed", false},
		{"?view=staleness&from=2020-01-01&to=2024-12-31", false},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, doc := pgGet(t, env, c, "/assets/t.long"+tc.query)
			mode := doc.Find(`[data-testid="grid"]`).AttrOr("data-mode", "")
			box := doc.Find(`[data-testid="selection-bar"] [data-testid="select-mode"]`).Length()
			note := strings.TrimSpace(doc.Find(`[data-testid="selection-bar"] [data-testid="select-mode-off"]`).Text())
			if (mode != "buckets") != tc.tiles {
				t.Fatalf("grid mode %q", mode)
			}
			if tc.tiles && (box != 1 || note != "") {
				t.Errorf("tiles: %d Select on the grid boxes, note %q", box, note)
			}
			if !tc.tiles && (box != 0 || !strings.Contains(note, "nothing to select on the grid")) {
				t.Errorf("buckets: %d Select on the grid boxes, note %q", box, note)
			}
		})
	}
}
