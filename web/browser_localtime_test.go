package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserLocalTime: a browser in Tokyo loads a page (which tells the
// server its zone), and the next pages show times in JST; choosing
// Europe/Berlin on /settings/timezone stores it for the user, and pages show
// CET/CEST from then on although the browser stays in Tokyo. Screenshots
// (1280 and 390 px) go to TESSERA_SCREENSHOTS.
func TestBrowserLocalTime(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	ctx := testkit.Browser(t)
	tokyo := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	})
	if err := chromedp.Do(ctx, tokyo, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	name := env.BrowserSignIn(t, ctx, auth.RoleViewer) // the sign-in page and the overview load app.js
	if got := testkit.JS(t, ctx, `Intl.DateTimeFormat().resolvedOptions().timeZone`); got != "Asia/Tokyo" {
		t.Fatalf("the browser's zone is %q, want the emulated Asia/Tokyo", got)
	}
	updatedIn := func(zones string) string {
		return `/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (` + zones + `)$/.test((document.querySelector('[data-testid="updated-at"]')||{}).textContent||"")`
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/status"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="updated-at"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, updatedIn("JST"), 30*time.Second, "the status board's time in JST")
	testkit.Screenshot(t, ctx, "localtime-1280-status-jst")
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/assets/crm.accounts_snapshot/partitions/acme"), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `[...document.querySelectorAll('[data-testid="last-materialization"] dd, [data-testid="last-attempt"] dd')].some(e => / JST$/.test(e.textContent.trim()))
		&& ![...document.querySelectorAll('main dd, main td, [data-testid="stale-evidence"]')].some(e => / UTC$/.test(e.textContent.trim()))`, 30*time.Second, "the partition page's times in JST, none in UTC")
	testkit.Screenshot(t, ctx, "localtime-1280-partition-jst")

	// Choose a zone on the settings page, through the nav.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="nav-timezone"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="timezone-select"]`)),
	); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="timezone-select"] option[value=""]').textContent.includes("Browser default (Asia/Tokyo)")`, 30*time.Second, "the browser default naming Asia/Tokyo")
	testkit.Screenshot(t, ctx, "localtime-1280-settings")
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-testid="timezone-select"]`), "Europe/Berlin"),
		chromedp.Click(chromedp.CSS(`[data-testid="save-timezone"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="notice"]`)),
	); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="timezone-select"]').value === "Europe/Berlin" && /C(E|ES)T$/.test(document.querySelector('[data-testid="tz-example"]').textContent)`,
		30*time.Second, "Europe/Berlin chosen and shown")
	u, err := env.Store.UserByName(context.Background(), name)
	if err != nil || u.Timezone != "Europe/Berlin" {
		t.Fatalf("stored zone %q (%v), want Europe/Berlin", u.Timezone, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/status"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="updated-at"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, updatedIn("CET|CEST"), 30*time.Second, "the status board in the chosen zone, the browser still in Tokyo")

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(env.URL+"/settings/timezone"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="timezone-select"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "localtime-390-settings")
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/assets/crm.accounts_snapshot/partitions/acme"), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "localtime-390-partition-cet")
}
