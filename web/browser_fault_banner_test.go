package web_test

import (
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
	ctx := testkit.Browser(t)
	env.BrowserSignIn(t, ctx, auth.RoleViewer)
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
	if _, err := env.Store.W.Exec(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	// A write has to fail for the store to know (the engine's heartbeat, or this one).
	if err := env.Store.AppendBenchEvent(t.Context(), time.Now()); err == nil {
		t.Fatal("a write went through a read-only store")
	}
	testkit.Eventually(t, 30*time.Second, "the open page to show the banner", shown)
	testkit.Screenshot(t, ctx, "fault-banner-live")
	if _, err := env.Store.W.Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the open page to lose the banner", func() bool { return !shown() })
}
