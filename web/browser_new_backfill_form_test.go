package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserNewBackfillForm: the form offers four selections (no two
// overlapping); an asset's own chunk size shows under it when it is
// ticked, and the preview counts its chunks by it; scrolled to its
// foot at 1280 × 800, the preview and Launch are still in view.
func TestBrowserNewBackfillForm(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	ctx := env.SignedInBrowser(t, auth.RoleOperator)
	visible := func(sel string) string {
		return `(() => { const e = document.querySelector('` + sel + `'); if (!e) return false; const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0 && b.top < innerHeight && b.bottom > 0; })()`
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(env.URL+"/backfills/new?asset=raw.events&start=2025-03-01-00:00&end=2025-03-02-23:00&chunk_size=24"),
	); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, visible(`[data-testid="preview-partitions"]`), 30*time.Second, "the preview")
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('input[name="selector"]').length)`); n != "4" {
		t.Errorf("%s selections offered, want 4", n)
	}
	if testkit.JS(t, ctx, `String(`+visible(`[data-testid="chunk-size-raw.events"]`)+` && !`+visible(`[data-testid="chunk-size-analytics.daily_events"]`)+`)`) != "true" {
		t.Error("the ticked asset has no chunk size of its own, or an unticked one has")
	}
	testkit.Click(t, ctx, `[data-testid="asset-analytics.daily_events"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, visible(`[data-testid="chunk-size-analytics.daily_events"]`)+` && `+visible(`[data-testid="chunk-size-raw.events"]`), 30*time.Second, "each ticked asset's chunk size")
	if testkit.JS(t, ctx, `String(`+visible(`[data-testid="chunk-size-ml.features"]`)+`)`) != "false" {
		t.Error("an unticked asset's chunk size shows")
	}
	// The range covers 2 days: 48 hours in chunks of 24, 2 days in 1 chunk of 7.
	if err := chromedp.Do(ctx, chromedp.SendKeys(css(`[data-testid="chunk-size-analytics.daily_events"]`), "7")); err != nil {
		t.Fatal(err)
	}
	chunksOf := func(a string) string {
		return `((document.querySelector('[data-testid="preview-asset"][data-asset="` + a + `"]')||{cells:[]}).cells[2]||{}).textContent`
	}
	testkit.WaitJS(t, ctx, chunksOf("raw.events")+` === "2" && `+chunksOf("analytics.daily_events")+` === "1"`, 30*time.Second, "the preview's chunks by each asset's size")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`)); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "new-backfill-1280-scrolled")
	if testkit.JS(t, ctx, `String(`+visible(`[data-testid="preview-partitions"]`)+` && `+visible(`[data-testid="launch"]`)+`)`) != "true" {
		t.Error("scrolled down, the preview or Launch left the window")
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	if testkit.JS(t, ctx, `String(`+visible(`[data-testid="launch"]`)+`)`) != "true" {
		t.Error("at the top of a long form, Launch is out of view")
	}
	testkit.Screenshot(t, ctx, "new-backfill-1280")
}

// TestBrowserNewBackfillSignInComesBack: an anonymous reader of the
// new-backfill form (anonymous viewers on) is asked to sign in, not told
// about roles; the link signs an operator in and brings them back to the
// same form, prefilled, with Launch.
func TestBrowserNewBackfillSignInComesBack(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1, AnonymousViewer: true}})
	env.CreateUser(t, "olga", auth.RoleOperator, testkit.TestPassword)
	ctx := testkit.Browser(t)
	const form = "/backfills/new?asset=crm.accounts_snapshot&selector=explicit&keys=acme"
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+form), chromedp.WaitVisible(css(`[data-testid="launch-not-allowed"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJSEquals(t, ctx, `document.querySelector('[data-testid="launch-not-allowed"]').innerText`, "Sign in to launch a backfill.", 5*time.Second, "the form to ask an anonymous reader to sign in")
	testkit.ClickAndLoad(t, ctx, `[data-testid="launch-sign-in"]`, 10*time.Second)
	err := chromedp.Do(ctx,
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
		chromedp.SendKeys(css(`input[name="name"]`), "olga"),
		chromedp.SendKeys(css(`input[name="password"]`), testkit.TestPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="launch"]`)),
	)
	if err != nil {
		t.Fatalf("signing in from the form did not come back to it with Launch: %v", err)
	}
	testkit.WaitJSEquals(t, ctx, `location.pathname + location.search`, form, 5*time.Second, "the browser to be back on the same form")
	testkit.WaitJSEquals(t, ctx, `document.querySelector('[data-testid="keys"]').value`, "acme", 5*time.Second, "the form to keep its prefilled keys")
}
