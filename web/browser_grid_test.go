package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserOverviewGridPartition: in headless Chromium, open the overview,
// follow an asset to its grid, zoom with the range form, open a tile's
// partition page and see its history.
func TestBrowserOverviewGridPartition(t *testing.T) {
	t.Parallel()
	env, ctx := testkit.SeededBrowser(t, auth.RoleViewer)
	// The lineage graph is swapped in above the asset list once the page
	// has loaded, pushing the list down: the click on a row waits for it,
	// or it can land where the row was (on a loaded machine, between
	// chromedp measuring the link and pressing the mouse).
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="asset-row"]`)),
		chromedp.WaitVisible(css(`[data-testid="lineage-svg"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	assets, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="asset-row"]').length`))
	if err != nil || assets != len(env.WS.Assets) {
		t.Fatalf("overview shows %d assets (%v)", assets, err)
	}
	// Each step below leads to another page: it is read once that page has
	// loaded (WaitVisible alone can match an element of a page still being
	// parsed, whose tiles after it are not there yet).
	testkit.ClickAndLoad(t, ctx, `[data-asset="analytics.daily_events"] a`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="grid"]`))); err != nil {
		t.Fatal(err)
	}
	heading, _ := chromedp.Run(ctx, chromedp.Text(css(`[data-testid="asset-key"]`)))
	mode, _ := chromedp.Run(ctx, chromedp.AttributeValue(css(`[data-testid="grid"]`), "data-mode"))
	if heading != "analytics.daily_events" || mode.Value != "calendar" {
		t.Fatalf("heading %q mode %q", heading, mode.Value)
	}
	// Narrow the window to February 2025 with the form.
	testkit.MarkPage(t, ctx)
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(`input[name="from"]`), "2025-02-01"),
		chromedp.SetValue(css(`input[name="to"]`), "2025-02-28"),
		chromedp.Submit(css(`[data-testid="grid-filters"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitNewPage(t, ctx, 30*time.Second, "the February grid the form leads to")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="zoom-out"]`))); err != nil {
		t.Fatal(err)
	}
	tiles, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="grid"] a').length`))
	if err != nil || tiles != 28 {
		t.Fatalf("February shows %d tiles (%v)", tiles, err)
	}
	testkit.Screenshot(t, ctx, "asset-grid")
	title, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`[data-testid="grid"] a[href$="2025-02-14"]`), "title"))
	if err != nil || !strings.HasPrefix(title.Value, "2025-02-14 · ") {
		t.Fatalf("tile title %q (%v)", title.Value, err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="grid"] a[href$="2025-02-14"]`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="partition-key"]`))); err != nil {
		t.Fatal(err)
	}
	// Read until it answers: make test's web pass once read "" here, the
	// page just shown (a read that fails says nothing).
	var partition string
	var readErr error
	defer func() {
		if partition != "2025-02-14" {
			t.Logf("partition page %q (%v)", partition, readErr)
		}
	}()
	testkit.Eventually(t, 30*time.Second, "the partition page of 2025-02-14", func() bool {
		partition, readErr = chromedp.Run(ctx, chromedp.Text(css(`[data-testid="partition-key"]`)))
		return partition == "2025-02-14"
	})
	// The history section is refreshed in place every 2 s (hx-select-oob):
	// read it once it is there, not in the middle of a swap.
	var main string
	testkit.Eventually(t, 30*time.Second, "the partition page's history", func() bool {
		main, _ = chromedp.Run(ctx, chromedp.Text(css(`#partition-history`)))
		return strings.Contains(main, "History")
	})
	testkit.Screenshot(t, ctx, "partition")
}
