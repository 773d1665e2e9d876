package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// instancesWorkspace has a command asset whose chunks take a moment each.
const instancesWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  inst.daily:
    partitions: {daily: {start: "2025-01-01", end: "2025-03-01"}}
    executor: {command: [sh, -c, 'sleep 0.3']}
`

// runLinks keeps eng in touch with the other instances on its database
// until the test ends.
func runLinks(t *testing.T, eng *jobs.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.RunInstanceLinks(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestBrowserFollowsBackfillOfAnotherInstance: two servers on one
// PostgreSQL database; only A's controller runs, so A executes every run.
// The backfill page served by B, opened while the backfill is paused,
// follows it without a reload when it is resumed on A: its state badge
// turns RUNNING then SUCCEEDED and its progress moves to 100%. Before, B's
// page heard only of B's own changes and stayed on PAUSED.
func TestBrowserFollowsBackfillOfAnotherInstance(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a := testkit.New(t, testkit.Options{WorkspaceYAML: instancesWorkspace, DB: url})
	engA := a.StartEngine(t, jobs.Options{})
	runLinks(t, engA)
	b := testkit.New(t, testkit.Options{WorkspaceYAML: instancesWorkspace, DB: url})
	engB := b.NewEngine(t, nil, jobs.Options{}) // serves B's pages; its controller does not run
	runLinks(t, engB)
	bf := testkit.CreateBackfill(t, engA, jobs.Request{Assets: []string{"inst.daily"},
		Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-08"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	if _, err := engA.Transition(context.Background(), bf.ID, jobs.ActPause, 0, false, "test"); err != nil {
		t.Fatal(err)
	}
	ctx := b.SignedInBrowser(t, auth.RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(b.URL+"/backfills/"+bf.ID), chromedp.WaitVisible(css(`[data-testid="progress-pct"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "PAUSED"), 30*time.Second, "B's page to show the backfill PAUSED")
	testkit.WaitJS(t, ctx, streamsOpen, 30*time.Second, "B's page's stream to connect")
	testkit.JS(t, ctx, `window.__notReloaded = "yes"`)
	if _, err := engA.Transition(context.Background(), bf.ID, jobs.ActResume, 0, false, "test"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "B's page to show the backfill RUNNING, resumed on A")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED"), 30*time.Second, "B's page to show the backfill SUCCEEDED, run by A")
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="progress-pct"]').textContent.trim() === "100%"`, 30*time.Second, "B's progress to reach 100%")
	if got := testkit.JS(t, ctx, `String(window.__notReloaded)`); got != "yes" {
		t.Fatalf("B's page was reloaded (%q): it must follow by itself", got)
	}
	owners := a.Count(t, `SELECT COUNT(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ? AND a.owner != ?`, bf.ID, engA.Owner())
	if owners != 0 {
		t.Fatalf("%d attempts ran elsewhere than on A", owners)
	}
	testkit.Screenshot(t, ctx, "instances-follow")
}
