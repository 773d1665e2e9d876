package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// shotWidths are the screen widths of the runs items' screenshots.
var shotWidths = [][2]int64{{1280, 800}, {390, 844}}

// runsShots saves the page of ctx at each of shotWidths as name-WIDTH,
// checking that it is no wider than the screen, and leaves the browser at
// 1280 px.
func runsShots(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	for _, wh := range shotWidths {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(wh[0], wh[1])); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, fmt.Sprintf(`document.documentElement.scrollWidth <= %d`, wh[0]+2), 30*time.Second, fmt.Sprintf("%s no wider than %d px", name, wh[0]))
		testkit.Screenshot(t, ctx, fmt.Sprintf("%s-%d", name, wh[0]))
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
}

// pairAsset (appended to the flow workspace, the directory its runs mark
// themselves started in as %s) is an asset whose first run waits for a
// second to start before it ends: its backfill on 3 slots has two runs at
// once however slowly the engine starts them (a run of a fixed 700 ms
// could end before a loaded machine started the next, a peak of 1).
const pairAsset = `  flow.pair:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor:
      command: ['mkdir -p "$FLOW_STARTED" && touch "$FLOW_STARTED/$TESSERA_PARTITIONS" && while [ "$(ls "$FLOW_STARTED" | wc -l)" -lt 2 ]; do sleep 0.05; done; echo "built $TESSERA_PARTITIONS"']
      shell: true
      env: {FLOW_STARTED: "%s"}
`

// Flow (issue 24, item 6): a backfill of 8 chunks on 3 slots runs → its
// page draws the chunks on a timeline, one lane per slot, each bar a link
// to its run → the main nav's Runs lists its 8 runs with durations; the
// filters narrow it on the server and are the page's address; a bad one
// says what is wrong on the page → a run opens its run page.
func TestBrowserRunsPageAndChunkTimeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startBinaryServer(t, flowWS(dir)+fmt.Sprintf(pairAsset, filepath.Join(dir, "started")))
	ctx := s.browser(t)
	bf := launchFromURL(t, ctx, s, "asset=flow.pair&start=2025-01-01&end=2025-01-08&chunk_size=1&max_concurrent_runs=3&title=Eight+days")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED"), 60*time.Second, "SUCCEEDED")
	// The live page redraws the timeline; a reload shows the final one.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelectorAll('[data-testid="gantt-bar"]').length === 8`, 30*time.Second, "8 bars on the chunk timeline")
	peak := testkit.JS(t, ctx, `document.querySelector('[data-testid="gantt"]').dataset.peak`)
	lanes := testkit.JS(t, ctx, `String(new Set([...document.querySelectorAll('[data-testid="gantt-bar"]')].map(b => b.dataset.lane)).size)`)
	if lanes != peak || peak < "2" || peak > "3" {
		t.Errorf("the timeline draws %s lanes for a peak of %s slots (max 3 at once)", lanes, peak)
	}
	if cap := testkit.JS(t, ctx, `document.querySelector('[data-testid="gantt-caption"]').innerText`); !strings.Contains(cap, "8 attempts") {
		t.Errorf("timeline caption %q", cap)
	}
	testkit.JS(t, ctx, `(window.scrollTo(0, 0), "")`)
	runsShots(t, ctx, "backfill-chunk-timeline")
	runID := testkit.JS(t, ctx, `document.querySelector('[data-testid="gantt-bar"][data-chunk="0"]').parentNode.getAttribute('href')`)
	// In the middle of the window, clear of the state bar kept at the top.
	testkit.JS(t, ctx, `(document.querySelector('[data-testid="gantt-bar"][data-chunk="0"]').scrollIntoView({block: "center"}), "")`)
	testkit.ClickAndLoad(t, ctx, `[data-testid="gantt-bar"][data-chunk="0"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(`location.pathname === %q`, runID), 30*time.Second, "the run page of chunk 0 from its bar")

	// The runs page, from the main nav (each link and filter below is read
	// once the page it leads to has loaded: a condition on its rows can
	// hold while the cells after them are still being parsed).
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="nav-runs"]')`, 30*time.Second, "the run page's nav")
	testkit.MarkPage(t, ctx)
	testkit.JS(t, ctx, `(document.querySelector('[data-testid="nav-runs"]').click(), "")`)
	testkit.WaitNewPage(t, ctx, 30*time.Second, "the runs page from the nav")
	testkit.WaitJS(t, ctx, `location.pathname === "/runs" && document.querySelectorAll('[data-testid="run-row"]').length === 8`, 30*time.Second, "the 8 runs on /runs")
	if d := testkit.JS(t, ctx, `[...document.querySelectorAll('[data-testid="run-duration"]')].filter(td => !/s$/.test(td.innerText.trim())).length + ""`); d != "0" {
		t.Errorf("%s runs without a duration", d)
	}
	if bfl := testkit.JS(t, ctx, `document.querySelector('[data-testid="run-backfill"]').innerText + " " + document.querySelector('[data-testid="run-backfill"]').getAttribute('href')`); bfl != "Eight days "+bf {
		t.Errorf("a run's backfill reads %q", bfl)
	}
	runsShots(t, ctx, "runs")
	// Filter on the server: the form's choices become the address.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`[data-testid="runs-state"]`), "succeeded"),
		chromedp.SetValue(css(`[data-testid="runs-asset"]`), "flow.daily"),
	); err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="runs-apply"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.search.includes("state=succeeded") && location.search.includes("asset=flow.daily") && !!document.querySelector('[data-testid="runs-empty"]')`, 30*time.Second, "no flow.daily run")
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`[data-testid="runs-asset"]`), "flow.pair"),
		chromedp.SetValue(css(`[data-testid="runs-backfill"]`), strings.TrimPrefix(bf, "/backfills/")),
	); err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="runs-apply"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.search.includes("asset=flow.pair") && document.querySelectorAll('[data-testid="run-row"][data-state="succeeded"]').length === 8`, 30*time.Second, "8 succeeded flow.pair runs")
	shared := testkit.JS(t, ctx, `location.href`)
	// A bad filter: a 400 page that says which and how to fix it.
	if err := chromedp.Do(ctx, chromedp.SetValue(css(`[data-testid="runs-from"]`), "yesterday")); err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="runs-apply"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="runs-error"]')`, 30*time.Second, "the error of a bad from")
	if e := testkit.JS(t, ctx, `document.querySelector('[data-testid="runs-error"]').innerText`); !strings.Contains(e, `from must be a time, got "yesterday"; use RFC 3339`) {
		t.Errorf("bad from says %q", e)
	}
	if inv := testkit.JS(t, ctx, `document.querySelector('[data-testid="runs-from"]').getAttribute('aria-invalid')`); inv != "true" {
		t.Errorf("the from field is not marked (%s)", inv)
	}
	runsShots(t, ctx, "runs-bad-filter")
	// The shared address opens the same view.
	if err := chromedp.Do(ctx, chromedp.Navigate(shared)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelectorAll('[data-testid="run-row"]').length === 8 && document.querySelector('[data-testid="runs-state"]').value === "succeeded"`, 30*time.Second, "the shared filtered view")
	testkit.Click(t, ctx, `[data-testid="run-link"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname.startsWith("/runs/run_")`, 30*time.Second, "a run page from the list")
}

// Flow (issue 24, item 3): a partition page's Rebuild… opens the
// new-backfill form with that partition and its preview; nothing launches
// until Launch, which then builds it.
func TestBrowserRebuildFromThePartitionPage(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/assets/flow.daily/partitions/2025-01-03"),
		chromedp.WaitVisible(css(`[data-testid="rebuild"]`)),
	); err != nil {
		t.Fatal(err)
	}
	runsShots(t, ctx, "partition-rebuild")
	// A link: the form is read once its page has loaded.
	testkit.ClickAndLoad(t, ctx, `[data-testid="rebuild"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/backfills/new" && (document.querySelector('[data-testid="preview-partitions"]')||{}).dataset?.n === "1"`, 30*time.Second, "the form with the preview of 1 partition")
	got := testkit.JS(t, ctx, `[document.querySelector('[data-testid="asset-flow.daily"]').checked, document.querySelector('[data-testid="selector-explicit"]').checked,
		document.querySelector('[data-testid="keys"]').value.trim()].join("|")`)
	if got != "true|true|2025-01-03" {
		t.Errorf("the prefilled form: %s", got)
	}
	runsShots(t, ctx, "rebuild-form")
	form := testkit.JS(t, ctx, `location.href`)
	// Nothing launched yet.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/backfills"), chromedp.WaitVisible(css(`h1`))); err != nil {
		t.Fatal(err)
	}
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="backfill-row"]').length)`); n != "0" {
		t.Fatalf("%s backfills before Launch", n)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(form), chromedp.WaitVisible(css(`[data-testid="launch"]`)), chromedp.Click(css(`[data-testid="launch"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `location.pathname.startsWith("/backfills/bf_")`, 30*time.Second, "the launched backfill")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED"), 30*time.Second, "the rebuild SUCCEEDED")
	if sel := testkit.JS(t, ctx, `document.querySelector('[data-testid="selection"]').innerText`); !strings.Contains(sel, "explicit list of 1") {
		t.Errorf("the rebuild selects %q", sel)
	}
	if n := testkit.JS(t, ctx, `document.querySelector('[data-testid="count-succeeded"] b').innerText`); n != "1" {
		t.Errorf("the rebuild built %s partitions, want 1", n)
	}
}
