package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// reachWorkspace has an hourly asset whose runs take a minute: a backfill
// of it stays RUNNING (Pause and Cancel on offer) while the test looks.
const reachWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  reach.hourly:
    partitions: {hourly: {start: "2025-01-01-00:00"}}
    code_version: v1
    executor: {demo: {duration: 60s}}
`

// inView returns "" when every element of the selectors is inside the
// window (and not covered: the element at its centre is it or inside it),
// else which one is not and where it is.
const inView = `((sels) => {
  const bad = [];
  for (const s of sels) {
    const e = document.querySelector(s);
    if (!e) { bad.push(s + " missing"); continue; }
    const b = e.getBoundingClientRect();
    if (b.height === 0 || b.top < -0.5 || b.bottom > window.innerHeight + 0.5 || b.left < -0.5 || b.right > window.innerWidth + 0.5) {
      bad.push(s + " at y " + Math.round(b.top) + "–" + Math.round(b.bottom) + " (window " + window.innerHeight + " high, scrolled " + Math.round(window.scrollY) + ")");
      continue;
    }
    const c = document.elementFromPoint(b.left + Math.min(b.width / 2, 20), b.top + b.height / 2);
    if (!c || !(e === c || e.contains(c) || c.contains(e))) bad.push(s + " covered by " + (c ? c.tagName + "." + c.className : "nothing"));
  }
  return bad.join("; ");
})(%s)`

// TestBrowserBackfillControlsInReach: on a backfill page with a tall outcome
// grid and chunk table, the state badge, the progress bar and the buttons
// (Pause, Cancel) are inside the window at 1280 × 800 and 390 × 844, at the
// top of the page and after scrolling to its bottom. Launching from the form
// scrolled down to its Launch button opens the backfill page at its top.
// Before, the buttons sat under the outcome grid (out of the window) and the
// page opened scrolled as far down as the form had been.
func TestBrowserBackfillControlsInReach(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: reachWorkspace})
	env.StartEngine(t, jobs.Options{})
	ctx := testkit.Browser(t)
	env.BrowserSignIn(t, ctx, auth.RoleOperator)
	shots := os.Getenv("TESSERA_SCREENSHOTS")

	// Launch at phone size, the Launch button scrolled into view.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(env.URL+"/backfills/new?asset=reach.hourly&start=2025-01-01-00:00&end=2025-02-10-23:00&chunk_size=1&max_concurrent_runs=8"),
		chromedp.WaitVisible(css(`[data-testid="launch"]`)),
	); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="preview-partitions"]')||{}).dataset?.n === "984"`, 30*time.Second, "the preview of 984 partitions")
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.documentElement.scrollHeight)`),
		chromedp.Click(css(`[data-testid="launch"]`)),
	); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `location.pathname.startsWith("/backfills/bf_") && !!document.querySelector('[data-testid="actions"]')`, 30*time.Second, "the backfill page")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING")+` && !!document.querySelector('[data-testid="action-pause"]')`, 30*time.Second, "RUNNING with a Pause button")
	if y := testkit.JS(t, ctx, `String(window.scrollY)`); y != "0" {
		t.Errorf("after Launch the backfill page opened scrolled %s px down, want its top", y)
	}
	id := testkit.JS(t, ctx, `location.pathname`)

	controls := fmt.Sprintf(inView, `['[data-testid="state-badge"]', '[data-testid="progress-bar"]', '[data-testid="progress-pct"]', '[data-testid="action-pause"]', '[data-testid="action-cancel"]']`)
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(w, h),
			chromedp.Navigate(env.URL+id),
			chromedp.WaitVisible(css(`[data-testid="action-pause"]`)),
		); err != nil {
			t.Fatal(err)
		}
		if tall := testkit.JS(t, ctx, `String(document.documentElement.scrollHeight > 1.5 * window.innerHeight)`); tall != "true" {
			t.Fatalf("at %d × %d the page is not tall enough to test scrolling", w, h)
		}
		testkit.Screenshot(t, ctx, fmt.Sprintf("bf-controls-%d", w))
		eval(t, ctx, fmt.Sprintf("at the top, %d × %d", w, h), controls)
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.documentElement.scrollHeight)`)); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, `window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2`, 5*time.Second, "the page scrolled to its bottom")
		viewportShot(t, ctx, shots, fmt.Sprintf("bf-controls-%d-bottom", w))
		eval(t, ctx, fmt.Sprintf("scrolled to the bottom, %d × %d", w, h), controls)
	}
}

// viewportShot saves what the window shows (not the whole page) as
// name.png in dir (when set).
func viewportShot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
