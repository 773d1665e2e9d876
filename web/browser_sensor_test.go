package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// Flow (issue 22): open Sensors from the nav → a poll sensor's page → Dry
// run: its requests are shown with what each would build, nothing launched
// and the cursor unchanged → Evaluate now → open the backfill it launched,
// which says the sensor launched it and links back.
func TestBrowserSensorDryRun(t *testing.T) {
	t.Parallel()
	script := testkit.Script(t, "eval.sh", `c=${TESSERA_SENSOR_CURSOR:-0}; n=$((c+1))
echo "{\"cursor\": \"$n\", \"run_requests\": [{\"partitions\": [\"eu\", \"us\"], \"run_key\": \"batch-$n\"}]}"
`)
	// Interval 24h: the server's loop evaluates it once, as it starts.
	s := startBinaryServer(t, fmt.Sprintf(`defaults:
  retries: {max_attempts: 1}
assets:
  auto.regions:
    partitions: {static: [eu, us, ap]}
    executor: {demo: {duration: 100ms}}
sensors:
  files.landed:
    assets: [auto.regions]
    evaluator: {command: [%q]}
    interval: 24h
`, script))
	ctx := s.browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/"),
		chromedp.Click(css(`[data-testid="nav-sensors"]`)),
		chromedp.WaitVisible(css(`[data-testid="sensor-row"][data-name="files.landed"]`)),
	); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "sensors")
	// A link: the loop below reads (and reloads) the sensor page, not the
	// list being left.
	testkit.ClickAndLoad(t, ctx, `[data-testid="sensor-link"]`, 30*time.Second)
	// The loop's first evaluation (cursor 1) is on the page once it ran.
	testkit.WaitJS(t, ctx, `location.pathname === "/sensors/files.landed"`, 30*time.Second, "the sensor page")
	var cursor string
	var readErr error
	defer func() {
		if cursor != "1" {
			t.Logf("the sensor page's cursor read %q (%v)", cursor, readErr)
		}
	}()
	testkit.Eventually(t, 30*time.Second, "the first evaluation", func() bool {
		// Null-safe, and a failed read is read again: the previous round's
		// reload may still be loading (a read then fails, it does not end
		// the test).
		cursor, readErr = chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('[data-testid="cursor"]') || {innerText: ""}).innerText.trim()`))
		if readErr == nil && cursor == "1" {
			return true
		}
		_ = chromedp.Do(ctx, chromedp.Reload())
		return false
	})
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-dry-run"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="notice"]') && document.querySelector('[data-testid="evaluation-row"]').dataset.kind === "dry_run"`, 30*time.Second, "the dry run at the top of the evaluations")
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="evaluation-row"] [data-testid="request-preview"]').innerText`); got != "would build 2 partitions in 2 chunks" {
		t.Fatalf("the dry run's request says %q", got)
	}
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="evaluation-row"] [data-testid="evaluation-request"]').innerText`); !containsAll(got, "2 partitions (eu, us)", "batch-2") {
		t.Fatalf("the dry run's request reads %q", got)
	}
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="cursor"]').innerText.trim() + "|" + document.querySelectorAll('[data-testid="evaluation-row"] [data-testid="request-backfill"]').length`); got != "1|1" {
		t.Fatalf("after the dry run, cursor|launched links = %s; want 1|1 (the loop's evaluation only)", got)
	}
	testkit.Screenshot(t, ctx, "sensor-dry-run")
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-evaluate"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="notice-link"]') && document.querySelector('[data-testid="cursor"]').innerText.trim() === "2"`, 30*time.Second, "the evaluation's backfill")
	bf := testkit.JS(t, ctx, `document.querySelector('[data-testid="notice-link"]').getAttribute("href")`)
	followLaunchedBackfill(t, ctx, bf, "created-by-sensor", "/sensors/files.landed")
	testkit.Click(t, ctx, `[data-testid="launched-by"] [data-testid="created-by-sensor"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/sensors/files.landed" && !!document.querySelector('[data-testid="run-key-row"][data-key="batch-2"]')`, 30*time.Second, "back on the sensor, with run key batch-2")
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
