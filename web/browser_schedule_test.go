package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

var scheduleFlowWorkspace = `defaults:
  retries: {max_attempts: 1}
` + testkit.Assets(
	testkit.Asset("auto.regions", "{static: [eu, us, ap]}", "executor: {demo: {duration: 100ms}}"),
) + `schedules:
  auto.nightly:
    cron: "0 3 * * *"
    timezone: Europe/Berlin
    assets: [auto.regions]
`

// Flow (issue 22): open Automation from the nav → the schedule's page →
// Pause (the page then offers Resume and says it is paused) → Run now →
// open the backfill it launched, which says the schedule launched it and
// links back; the schedule's history lists the tick with that backfill.
func TestBrowserSchedulePauseRunNow(t *testing.T) {
	t.Parallel()
	s := startBinaryServer(t, scheduleFlowWorkspace)
	ctx := s.browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/"),
		chromedp.Click(css(`[data-testid="nav-automation"]`)),
		chromedp.WaitVisible(css(`[data-testid="schedule-row"][data-name="auto.nightly"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st := testkit.JS(t, ctx, `document.querySelector('[data-testid="schedule-row"]').dataset.state`); st != "running" {
		t.Fatalf("state %s", st)
	}
	testkit.Screenshot(t, ctx, "automation")
	// A link: the page is read once it has loaded (its five tick rows can
	// be parsed before the preview under them).
	testkit.ClickAndLoad(t, ctx, `[data-testid="schedule-link"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/schedules/auto.nightly" && document.querySelectorAll('[data-testid="next-tick-row"]').length === 5`, 30*time.Second, "the schedule page with its next 5 ticks")
	if n := testkit.JS(t, ctx, `document.querySelector('[data-testid="preview-partitions"]').innerText`); n != "3" {
		t.Fatalf("the next tick's preview counts %s partitions, want 3", n)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-pause"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="schedule-state"]').dataset.state === "paused" && !!document.querySelector('[data-testid="action-resume"]')`, 30*time.Second, "paused, with Resume")
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-trigger"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="notice-link"]')`, 30*time.Second, "the run-now notice with its backfill")
	bf := testkit.JS(t, ctx, `document.querySelector('[data-testid="notice-link"]').getAttribute("href")`)
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="tick-row"] [data-testid="tick-backfill"]').getAttribute("href")`); got != bf {
		t.Fatalf("the tick links to %s, the notice to %s", got, bf)
	}
	testkit.Screenshot(t, ctx, "schedule-after-run-now")
	followLaunchedBackfill(t, ctx, bf, "created-by-schedule", "/schedules/auto.nightly")
	testkit.Screenshot(t, ctx, "backfill-from-schedule")
	testkit.Click(t, ctx, `[data-testid="created-by-schedule"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/schedules/auto.nightly" && document.querySelector('[data-testid="schedule-state"]').dataset.state === "paused"`, 30*time.Second, "back on the schedule, still paused")
}
