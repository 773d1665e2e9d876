package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// shownRows is the overview's listed assets, comma-separated.
const shownRows = `[...document.querySelectorAll('[data-testid="asset-row"]')].map(r => r.dataset.asset).join(",")`

// TestBrowserAssetFilter (issue 24, item 7): on the overview "/" focuses
// the filter; typing a part of a name lists only the assets whose names
// hold it, without a page load, and puts the filter in the address (a link
// to share: opened anew, the server lists the same); choosing a state lists
// only the assets in it; the lineage graph dims the assets left out; "Show
// all" lists them all again.
func TestBrowserAssetFilter(t *testing.T) {
	t.Parallel()
	env, ctx := testkit.SeededBrowser(t, auth.RoleViewer)
	narrowLoad(t, ctx, env, "/", 1280, `[data-testid="asset-filter"]`)
	testkit.WaitJS(t, ctx, `typeof htmx !== "undefined"`, 30*time.Second, "htmx to load")
	testkit.JS(t, ctx, `window.samePage = true, ""`) // gone if the page is loaded again
	// A real key press: one keyDown with its text, as a keyboard sends it
	// (chromedp's KeyEvent sends the character as an event of its own,
	// which the page cannot cancel).
	slash := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "/", Code: "Slash", Text: "/", UnmodifiedText: "/", WindowsVirtualKeyCode: 191, NativeVirtualKeyCode: 191}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: "/", Code: "Slash", WindowsVirtualKeyCode: 191, NativeVirtualKeyCode: 191}
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
	if err := chromedp.Do(ctx, slash); err != nil {
		t.Fatal(err)
	}
	if f := testkit.JS(t, ctx, `document.activeElement.dataset.testid || document.activeElement.tagName`); f != "asset-filter-q" {
		t.Fatalf(`"/" focused %s, not the filter`, f)
	}
	if v := testkit.JS(t, ctx, `document.activeElement.value`); v != "" {
		t.Fatalf(`"/" was typed into the filter: %q`, v)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("DAILY")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, shownRows+` === "analytics.daily_events" && location.search === "?q=DAILY&group=&state="`, 30*time.Second, "the list to show only analytics.daily_events, the address to hold the filter")
	if same := testkit.JS(t, ctx, `String(window.samePage === true)`); same != "true" {
		t.Error("the filter loaded the page anew instead of swapping the list")
	}
	testkit.WaitJS(t, ctx, `[...document.querySelectorAll('[data-testid="lineage-svg"] > a:not(.dim)')].map(a => a.getAttribute("href")).join(",") === "/assets/analytics.daily_events" && document.querySelectorAll('[data-testid="lineage-svg"] > a.dim').length === `+fmt.Sprint(len(env.WS.Assets)-1), 30*time.Second, "the graph to dim every asset but analytics.daily_events")
	if c := testkit.JS(t, ctx, `document.querySelector('[data-testid="asset-filter-count"]').textContent.replace(/\s+/g, " ").trim()`); !strings.HasPrefix(c, fmt.Sprintf("Showing 1 of %d assets.", len(env.WS.Assets))) {
		t.Errorf("count reads %q", c)
	}
	testkit.Screenshot(t, ctx, "filter-name-1280")

	// The address is the filter: opened anew, the server lists the same.
	href := testkit.JS(t, ctx, `location.href`)
	narrowLoad(t, ctx, env, strings.TrimPrefix(href, env.URL), 390, `[data-testid="asset-filter"]`)
	if got := testkit.JS(t, ctx, shownRows); got != "analytics.daily_events" {
		t.Errorf("the shared address lists %q", got)
	}
	if v := testkit.JS(t, ctx, `document.querySelector('[data-testid="asset-filter-q"]').value`); v != "DAILY" {
		t.Errorf("the shared address fills the field with %q", v)
	}
	eval(t, ctx, "filtered overview at 390 px", narrowFits)
	testkit.Screenshot(t, ctx, "filter-name-390")

	// A state: only the assets with failed partitions, whatever their name.
	narrowLoad(t, ctx, env, "/", 1280, `[data-testid="asset-filter"]`)
	testkit.WaitJS(t, ctx, `typeof htmx !== "undefined"`, 30*time.Second, "htmx to load")
	var failed []string
	for _, k := range strings.Split(testkit.JS(t, ctx, shownRows), ",") {
		n := testkit.JS(t, ctx, `(document.querySelector('[data-testid="asset-row"][data-asset="`+k+`"] [data-testid="asset-count-failed"]') || {textContent: "0"}).textContent.replace(/\D/g, "")`)
		if n != "0" {
			failed = append(failed, k)
		}
	}
	if len(failed) == 0 || len(failed) == len(env.WS.Assets) {
		t.Fatalf("the seeded overview has %d assets with failures of %d: the test needs some and not all", len(failed), len(env.WS.Assets))
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(css(`[data-testid="asset-filter-state"]`), "failed"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="asset-filter-state"]').dispatchEvent(new Event("change", {bubbles: true})), ({})`)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, shownRows+` === `+fmt.Sprintf("%q", strings.Join(failed, ",")), 30*time.Second, "the list to show only "+strings.Join(failed, ","))
	testkit.Screenshot(t, ctx, "filter-failed-1280")
	testkit.Click(t, ctx, `[data-testid="asset-filter-clear"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `document.querySelectorAll('[data-testid="asset-row"]').length === `+fmt.Sprint(len(env.WS.Assets)), 30*time.Second, "Show all to list every asset")
}
