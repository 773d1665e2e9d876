package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserRefusedStreamSaysSo: with one live stream per user, a
// second live page of the same user is refused (429); the page says so
// in its live section with the server's message, instead of going stale
// without a word, and the note goes once the first page is left and the
// stream connects.
func TestBrowserRefusedStreamSaysSo(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t, "--max-streams-per-user", "1")
	first := ctx // the signed-in tab
	if err := chromedp.Do(first, chromedp.Navigate(s.URL+"/assets/flow.slow"), chromedp.WaitVisible(css(`[data-testid="asset-key"]`))); err != nil {
		t.Fatal(err)
	}
	// The tab's page before (where sign-in landed) held the account's one
	// stream: until the server has seen it close, this page is refused
	// and retries (as the second page does below), which under make test
	// once took more than 5 s.
	testkit.WaitJS(t, first, `document.querySelector('[sse-connect]') !== null && !document.querySelector('[data-testid="live-note"]')`, 30*time.Second, "the first page's live section")
	second, closeSecond := chromedp.NewContext(ctx)
	defer closeSecond()
	if err := chromedp.Do(second, chromedp.Navigate(s.URL+"/backfills"), chromedp.WaitVisible(css(`h1`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, second, `(function () { var n = document.querySelector('[data-testid="live-note"]'); return n !== null && n.textContent.indexOf("too many live pages") >= 0 && n.textContent.indexOf("your account already holds 1") >= 0; })()`,
		30*time.Second, "a note with the server's reason on the refused page")
	// The page itself still works: its content is there.
	if got := testkit.JS(t, second, `document.querySelector('[data-testid="backfills-live"]') !== null ? "yes" : "no"`); got != "yes" {
		t.Fatalf("the refused page lacks its live section: %s", got)
	}
	// The first page is left for one without a live section.
	if err := chromedp.Do(first, chromedp.Navigate(s.URL+"/settings/tokens"), chromedp.WaitVisible(css(`h1`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, second, `document.querySelector('[data-testid="live-note"]') === null`, 30*time.Second, "the note gone once the stream connects")
}
