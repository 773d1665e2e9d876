package web_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/testkit"
)

// Flow: launch a backfill → cancel it with terminate part way → the page,
// updating live, offers "Backfill what it did not build…" (not to be taken
// for Retry failed) → it opens the new-backfill form prefilled with the same
// asset, chunk size and concurrency and the rest of its range from where it
// stopped (the first chunk it did not finish), whose preview counts exactly
// the partitions from there on
// → Launch creates that backfill. Then, on the form, ticking a status under
// "Only partitions that are" picks that choice and the live preview follows.
// relaunchEnd is the last day of TestBrowserRelaunchCanceled's backfill:
// 90 days from 2025-01-01.
const relaunchEnd = "2025-03-31"

func TestBrowserRelaunchCanceled(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	// 90 days in chunks of 2 (about a minute): still running when the cancel
	// lands, however slow the machine.
	launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end="+relaunchEnd+"&chunk_size=2&max_concurrent_runs=1")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "RUNNING")
	testkit.WaitJS(t, ctx, `+((document.querySelector('[data-testid="count-succeeded"] b')||{}).innerText||0) >= 2`, 30*time.Second, "a first chunk built")
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="action-relaunch"]').length)`); n != "0" {
		t.Fatal("a running backfill offers Backfill what it did not build")
	}
	bfCancelTerminate(t, ctx)
	// The buttons update live: the relaunch appears without a reload.
	testkit.WaitJS(t, ctx, `!!document.querySelector('a[data-testid="action-relaunch"]')`, 30*time.Second, "Backfill what it did not build… on the canceled page")
	parent := testkit.JS(t, ctx, `location.pathname`)
	label := testkit.JS(t, ctx, `document.querySelector('[data-testid="action-relaunch"]').innerText.trim()`)
	if label != "Backfill what it did not build…" {
		t.Errorf("the relaunch reads %q", label)
	}
	built, err := strconv.Atoi(testkit.JS(t, ctx, `document.querySelector('[data-testid="count-succeeded"] b').innerText`))
	if err != nil || built < 2 || built >= 90 {
		t.Fatalf("the canceled backfill built %d of 90 (%v)", built, err)
	}
	// One chunk at a time, 2 days each: it stopped at the first day of the
	// chunk it was building, whose first day it may have built already
	// (the terminate can land between a chunk's two days).
	first := built/2*2 + 1
	from := time.Date(2025, 1, first, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	note := testkit.JS(t, ctx, `document.querySelector('[data-testid="relaunch-note"]').innerText`)
	if !strings.Contains(note, "the rest of its range, from the first chunk it did not finish: range "+from+" … "+relaunchEnd) || !strings.Contains(note, "Preview, then launch") {
		t.Errorf("relaunch note %q", note)
	}
	testkit.Screenshot(t, ctx, "backfill-canceled-relaunch")

	testkit.ClickAndLoad(t, ctx, `[data-testid="action-relaunch"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname === "/backfills/new" && !!document.querySelector('[data-testid="preview-partitions"]')`, 30*time.Second, "the prefilled form with its preview")
	got := testkit.JS(t, ctx, `[document.querySelector('[data-testid="asset-flow.slow"]').checked, document.querySelector('[data-testid="selector-range"]').checked,
		document.querySelector('[data-testid="start"]').value, document.querySelector('[data-testid="end"]').value,
		document.querySelector('[data-testid="chunk-size"]').value, document.querySelector('[data-testid="max-concurrent"]').value].join("|")`)
	if want := "true|true|" + from + "|" + relaunchEnd + "|2|1"; got != want {
		t.Errorf("prefilled form: %s, want %s", got, want)
	}
	want := strconv.Itoa(90 - (first - 1))
	if n := testkit.JS(t, ctx, `document.querySelector('[data-testid="preview-partitions"]').dataset.n`); n != want {
		t.Errorf("the preview counts %s partitions, want %s (90 less the %d before %s; %d built)", n, want, first-1, from, built)
	}
	testkit.Screenshot(t, ctx, "backfill-relaunch-form")
	testkit.Click(t, ctx, `[data-testid="launch"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(`location.pathname.startsWith("/backfills/bf_") && location.pathname !== %q`, parent), 30*time.Second, "the new backfill's page")
	if sel := testkit.JS(t, ctx, `document.querySelector('[data-testid="selection"]').innerText`); sel != "range "+from+" … "+relaunchEnd {
		t.Errorf("the new backfill selects %q", sel)
	}
	if title := testkit.JS(t, ctx, `document.querySelector('#bf-summary h1').innerText`); !strings.HasPrefix(title, "Rest of ") || strings.Contains(title, strings.TrimPrefix(parent, "/backfills/")) {
		t.Errorf("the new backfill's title %q", title)
	}

	// Ticking a status picks "Only partitions that are"; the preview follows.
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/backfills/new?asset=flow.daily&start=2025-01-01&end=2025-01-10"),
		chromedp.WaitVisible(css(`[data-testid="status-missing"]`)),
		chromedp.Click(css(`[data-testid="status-missing"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="selector-statuses"]').checked && (document.querySelector('[data-testid="preview-partitions"]')||{dataset:{}}).dataset.n === "10"`,
		30*time.Second, "the statuses choice ticked and a preview of the 10 missing days")
	// Unticked again: refused next to the statuses, in the live preview.
	testkit.Click(t, ctx, `[data-testid="status-missing"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `((document.querySelector('[data-testid="preview-error"]')||{}).innerText||"").includes("tick at least one status")`, 30*time.Second, "the no-status message")
}
