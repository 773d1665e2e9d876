package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// gridWorkspace is a daily × region asset of 100 days: 300 partitions, more
// than a matrix draws as tiles (62 rows of 3), so its whole history is a
// bucket strip while its default window (2025-02-08 … 2025-04-10) is tiles.
const gridWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  g.multi:
    partitions:
      multi:
        date: {daily: {start: "2025-01-01", end: "2025-04-11"}}
        region: {static: [eu, us, apac]}
    code_version: v1
    executor: {demo: {duration: 5ms}}
`

const selN = `(document.querySelector('[data-testid="selection-n"]')||{dataset:{}}).dataset.n`

// TestBrowserGridSelectionBar walks the asset grid's selection bar as the
// audit did: it starts out counting the window shown, a range picked on the
// grid is counted with the dimension value picked in Only (a list of the
// asset's values) as the form it opens previews it, and
// at the whole history (a bucket strip) it offers no grid selection and no
// Zoom out.
func TestBrowserGridSelectionBar(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: gridWorkspace})
	env.StartEngine(t, jobs.Options{})
	ctx := env.SignedInBrowser(t, auth.RoleOperator)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/assets/g.multi"),
		chromedp.WaitVisible(css(`[data-testid="selection-bar"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing selected yet: the window shown, 62 days × 3 regions.
	testkit.WaitJS(t, ctx, selN+` === "186"`, 30*time.Second, "the window's count, 186")
	bar := `document.querySelector('[data-testid="selection-bar"]')`
	if got := testkit.JS(t, ctx, bar+`.elements.start.value + ".." + `+bar+`.elements.end.value`); got != "2025-02-08|eu..2025-04-10|apac" {
		t.Errorf("the bar starts out with %s, want the window shown", got)
	}
	// Click 2025-03-01|us, shift-click 2025-03-03|eu: 6 partitions.
	err = chromedp.Do(ctx,
		chromedp.Click(css(`[data-testid="select-mode"]`)),
		chromedp.Click(css(`[data-testid="grid"] a[data-pos="179"]`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="grid"] a[data-pos="184"]').dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, shiftKey: true}))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, selN+` === "6"`, 30*time.Second, "the selection count 6")
	if got := testkit.JS(t, ctx, bar+`.elements.start.value + ".." + `+bar+`.elements.end.value`); got != "2025-03-01|us..2025-03-03|eu" {
		t.Fatalf("selection %s, want 2025-03-01|us..2025-03-03|eu", got)
	}
	// Only: the region's values are a list to pick from, not a text to
	// type; region=eu: 2 of them, as the form will preview.
	opts := testkit.JS(t, ctx, `[...document.querySelectorAll('[data-testid="sel-dimension"] option')].map(o => o.value || "(every value)").join(",")`)
	if opts != "(every value),region=eu,region=us,region=apac" {
		t.Errorf("the dimension picker offers %s", opts)
	}
	pick := func(v string) {
		t.Helper()
		err := chromedp.Do(ctx, chromedp.SetValue(css(`[data-testid="sel-dimension"]`), v),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="sel-dimension"]').dispatchEvent(new Event("change", {bubbles: true}))`))
		if err != nil {
			t.Fatal(err)
		}
	}
	pick("region=eu")
	testkit.WaitJS(t, ctx, selN+` === "2"`, 30*time.Second, "the selection count 2 with region=eu")
	pick("")
	testkit.WaitJS(t, ctx, selN+` === "6"`, 30*time.Second, "the selection count 6 with every value")
	pick("region=eu")
	testkit.WaitJS(t, ctx, selN+` === "2"`, 30*time.Second, "the selection count 2 again")
	testkit.Click(t, ctx, `[data-testid="backfill-selection"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/backfills/new" && (document.querySelector('[data-testid="preview-partitions"]')||{dataset:{}}).dataset.n === "2"`, 30*time.Second, "a preview of 2 partitions")

	// The whole history is a bucket strip: nothing to select on, nothing to
	// zoom out to.
	whole := "/assets/g.multi?" + url.Values{"from": {"2025-01-01|eu"}, "to": {"2025-04-10|apac"}}.Encode()
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+whole), chromedp.WaitVisible(css(`[data-testid="selection-bar"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="select-mode-off"]')`, 30*time.Second, "the note that there is nothing to select on the grid")
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="select-mode"]').length) + document.querySelector('[data-testid="grid"]').dataset.mode`); n != "0buckets" {
		t.Errorf("whole history: %s select-mode boxes and grid mode, want 0buckets", n)
	}
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="zoom-out"]').length)`); n != "0" {
		t.Error("the whole history offers Zoom out")
	}
	testkit.WaitJS(t, ctx, selN+` === "300"`, 30*time.Second, "the whole history's count, 300")
	testkit.Screenshot(t, ctx, "asset-grid-whole-history-bar")
}
