package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserHTTP2LiveTabs: served over HTTPS (--tls-cert, --tls-key), the
// browser speaks HTTP/2, so the live stream of every open page shares one
// connection: seven asset pages stay visible and live, and an eighth page
// still loads. Over HTTP/1.1 a browser opens six connections to a server,
// and the seventh live page would wait for ever.
func TestBrowserHTTP2LiveTabs(t *testing.T) {
	t.Parallel()
	cert, key, _ := testkit.SelfSignedCert(t, t.TempDir(), "tls")
	s := startBinaryServer(t, flowWS(t.TempDir()), "--tls-cert", cert, "--tls-key", key)
	ctx := s.browser(t, chromedp.Flag("ignore-certificate-errors", true))
	if p := testkit.JS(t, ctx, `performance.getEntriesByType('navigation')[0].nextHopProtocol`); p != "h2" {
		t.Fatalf("the page came over %q, want h2", p)
	}
	var tabs []context.Context
	for i := range 7 {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		if err := chromedp.Do(tab); err != nil { // opens the tab (a timeout context's end would close it)
			t.Fatal(err)
		}
		load, cancelLoad := context.WithTimeout(tab, 30*time.Second)
		err := chromedp.Do(load, chromedp.Navigate(s.URL+"/assets/flow.slow"), chromedp.WaitVisible(css(`[data-testid="asset-key"]`)))
		cancelLoad()
		if err != nil {
			t.Fatalf("asset page %d of 7 did not load with %d live pages open: %v", i+1, i, err)
		}
		testkit.WaitJS(t, tab, streamsOpen, 30*time.Second, fmt.Sprintf("the stream of asset page %d to connect", i+1))
		if n := testkit.JS(t, tab, `String(document.querySelectorAll('[sse-connect]').length)`); n != "1" {
			t.Fatalf("asset page %d has %s live streams", i+1, n)
		}
		tabs = append(tabs, tab)
	}
	eighth, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(eighth, chromedp.Navigate(s.URL+"/status"), chromedp.WaitVisible(css(`h1`))); err != nil {
		t.Fatalf("an eighth page does not load beside seven live asset pages: %v", err)
	}
	// Every one of them is live: a launch shows up on the first and the
	// last. The backfill is active for a minute (90 runs of 700 ms, one at
	// a time): one of a single run could end, and leave the list, before
	// the test, slow on a loaded machine, looked at the tabs.
	launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-03-31&chunk_size=1&max_concurrent_runs=1")
	for _, tab := range []context.Context{tabs[0], tabs[6]} {
		testkit.WaitJS(t, tab, `document.querySelector('[data-testid="asset-active-backfills"] [data-testid="backfill-row"]') !== null`, 30*time.Second,
			"the new backfill on a live asset page")
	}
}
