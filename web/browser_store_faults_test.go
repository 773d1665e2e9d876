package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserFaultBannerFollowsTheStore: a page left open shows the banner
// when the database stops taking writes and loses it when it takes them
// again, without a reload (before, the banner was drawn only when a page
// loaded; found by the UI audit).
func TestBrowserFaultBannerFollowsTheStore(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.Store.SetFaultHold(50 * time.Millisecond)
	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	// The empty banner holder has no size: wait for it to be in the page.
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/backfills"), chromedp.WaitReady(`#fault-banner`)); err != nil {
		t.Fatal(err)
	}
	shown := func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="store-banner"]').length`))
		return err == nil && n > 0
	}
	if shown() {
		t.Fatal("a banner while the store writes")
	}
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	// A write has to fail for the store to know (the engine's heartbeat, or this one).
	if err := env.Store.AppendBenchEvent(t.Context(), time.Now()); err == nil {
		t.Fatal("a write went through a read-only store")
	}
	testkit.Eventually(t, 30*time.Second, "the open page to show the banner", shown)
	testkit.Screenshot(t, ctx, "fault-banner-live")
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the open page to lose the banner", func() bool { return !shown() })
}

// TestBrowserLaunchShowsTheErrorItGot: Launch replaces the page through
// htmx; when the server refuses with something else than a form error
// (here 503: this server runs no backfill engine; a full disk answers the
// same way), the page shows the server's error page instead of staying as
// it was with nothing said (found by the UI audit).
func TestBrowserLaunchShowsTheErrorItGot(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{}) // no engine: launching is refused with 503
	ctx := env.SignedInBrowser(t, auth.RoleOperator)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/backfills/new?asset=crm.accounts_snapshot&chunk_size=1&max_concurrent_runs=1"),
		chromedp.WaitVisible(`[data-testid="launch"]`),
		chromedp.Click(`[data-testid="launch"]`),
	); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the error page Launch got", func() bool {
		txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('[data-testid="error-message"]')||{}).innerText||""`))
		return err == nil && strings.Contains(txt, "the backfill engine is not running on this server")
	})
}
