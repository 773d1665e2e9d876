package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserStalenessTaintStatus: in headless Chromium, switch an asset's
// grid to the staleness view, open a partition, taint it with the form as an
// admin, see it TAINTED, then read the status board and its badge.
func TestBrowserStalenessTaintStatus(t *testing.T) {
	t.Parallel()
	env, ctx := testkit.SeededBrowser(t, auth.RoleAdmin)
	// Each link and form below leads to another page, read once it has
	// loaded: WaitVisible alone can match an element of a page still being
	// parsed (the grid's tiles, the status board's rows after it not there
	// yet) and the badges' images load after it.
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/assets/analytics.daily_events"),
		chromedp.WaitVisible(css(`[data-testid="view-staleness"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="view-staleness"]`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="stale-panel"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "asset-staleness")
	tiles, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="grid"] a[class*="z-"], [data-testid="grid"] a.s-x').length`))
	if err != nil || tiles == 0 {
		t.Fatalf("no staleness tiles (%v)", err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="grid"] a.z-ok, [data-testid="grid"] a.z-up, [data-testid="grid"] a.z-code').getAttribute('href')`))
	if err != nil || href == "" {
		t.Fatalf("no materialized tile (%v)", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(env.URL+href),
		chromedp.WaitVisible(css(`[data-testid="taint-form"]`)),
		chromedp.SetValue(css(`[data-testid="taint-form"] input[name="reason"]`), "double-counted <b>events</b>"),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="taint"]`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="clear-taint-form"]`))); err != nil {
		t.Fatal(err)
	}
	reason, _ := chromedp.Run(ctx, chromedp.AttributeValue(css(`[data-testid="stale-reason"]`), "data-reason"))
	evidence, _ := chromedp.Run(ctx, chromedp.Text(css(`[data-testid="stale-evidence"]`)))
	if reason.Value != "TAINTED" || !strings.Contains(evidence, "double-counted <b>events</b>") {
		t.Fatalf("after taint: %q %q", reason.Value, evidence)
	}
	testkit.Screenshot(t, ctx, "partition-tainted")
	testkit.ClickAndLoad(t, ctx, `[data-testid="nav-status"]`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="status-row"]`))); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="status-row"]').length`))
	if err != nil || rows != len(env.WS.Assets) {
		t.Fatalf("status board shows %d assets (%v)", rows, err)
	}
	// The board refreshes itself in place (new images, loading again):
	// polled until every badge has loaded.
	testkit.WaitJSEquals(t, ctx, `String([...document.querySelectorAll('[data-testid="badge-img"]')].filter(i => !(i.complete && i.naturalWidth > 0)).length)`, "0", 30*time.Second, "every badge image to load (the number not loaded)")
	testkit.Screenshot(t, ctx, "status-board")
}
