package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// setHidden makes the tab's page believe it was hidden or shown (headless
// Chromium reports every tab visible) and tells it so.
const setHidden = `(function(h){Object.defineProperty(document,'hidden',{get:function(){return h},configurable:true});
document.dispatchEvent(new Event('visibilitychange'));return String(document.querySelectorAll('[sse-connect]').length)})`

// TestBrowserHiddenTabsGiveBackStreams: every asset page holds a live
// stream, and over HTTP/1.1 a browser opens at most 6 connections to a
// server: with six asset pages open in background tabs, a seventh page
// never loaded. Hidden tabs now close their stream, and take it again (and
// catch up) when shown.
func TestBrowserHiddenTabsGiveBackStreams(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	var tabs []context.Context
	for range 6 {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		if err := chromedp.Do(tab, chromedp.Navigate(s.URL+"/assets/flow.slow"), chromedp.WaitVisible(css(`[data-testid="asset-key"]`))); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, tab, streamsOpen, 30*time.Second, "its stream to connect")
		if n := testkit.JS(t, tab, setHidden+`(true)`); n != "0" {
			t.Fatalf("a hidden tab keeps %s live streams", n)
		}
		tabs = append(tabs, tab)
	}
	seventh, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(seventh, chromedp.Navigate(s.URL+"/status"), chromedp.WaitVisible(css(`h1`))); err != nil {
		t.Fatalf("a seventh page does not load with six asset pages in background tabs: %v", err)
	}
	if n := testkit.JS(t, tabs[0], setHidden+`(false)`); n != "1" {
		t.Fatalf("a tab shown again has %s live streams", n)
	}
	testkit.WaitJS(t, tabs[0], streamsOpen, 30*time.Second, "the shown tab's stream to connect again")
	// Active for a minute (90 runs of 700 ms, one at a time): one run could
	// end, and leave the active list, before a slow machine's test looked.
	launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-03-31&chunk_size=1&max_concurrent_runs=1")
	testkit.WaitJS(t, tabs[0], `document.querySelector('[data-testid="asset-active-backfills"] [data-testid="backfill-row"]') !== null`, 30*time.Second,
		"the new backfill on the asset page shown again")
}

// TestBrowserHiddenTabKeepsChoices: hiding and showing a backfill page (its
// live section is rebuilt to close and reopen the stream) keeps an open
// Cancel confirmation and its ticked "terminate" box.
func TestBrowserHiddenTabKeepsChoices(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	// Six months of 0.7 s days, one at a time: still running when the page
	// opens its Cancel (six days once finished first under load, and the
	// Cancel button the test waited for never came).
	path := launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-06-30&chunk_size=1&max_concurrent_runs=1")
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(css(`[data-testid="action-cancel"]`)),
		chromedp.Click(css(`[data-testid="action-cancel"]`)), chromedp.Click(css(`[data-testid="terminate"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.JS(t, ctx, setHidden+`(true)`)
	if n := testkit.JS(t, ctx, setHidden+`(false)`); n != "1" {
		t.Fatalf("the page shown again has %s live streams", n)
	}
	got := testkit.JS(t, ctx, `String(document.querySelector('[data-testid="cancel-disclosure"]').open) + " " + String(document.querySelector('[data-testid="terminate"]').checked)`)
	if got != "true true" {
		t.Fatalf("after hiding and showing the tab, Cancel open and terminate ticked: %s", got)
	}
}
