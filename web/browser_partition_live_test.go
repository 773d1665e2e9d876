package web_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// Flow: a partition's page opened while a backfill rebuilds it says so, then
// follows the build without a reload: its status turns Materialized and its
// history shows the finished instance, while what the user typed in the
// taint form (offered since the partition has data from before) stays.
// Before, the page stayed "In progress" until reloaded.
func TestBrowserPartitionPageFollowsItsBuild(t *testing.T) {
	t.Parallel()
	s := startBinaryServer(t, `defaults:
  retries: {max_attempts: 1}
`+testkit.Assets(
		testkit.Asset("live.daily", testkit.Daily, "code_version: v1", "executor: {demo: {duration: 6s}}"),
	))
	// An admin, who sees the taint form.
	if out, err := exec.Command(tesseraBinary(t), "user", "set-role", "op", "admin", "--db", s.DB).CombinedOutput(); err != nil {
		t.Fatalf("set-role: %v\n%s", err, out)
	}
	// Data from before (a pipeline's report), so the admin may taint it
	// while it is rebuilt: a partition without data offers no taint form.
	tok, err := exec.Command(tesseraBinary(t), "token", "create", "--user", "op", "--name", "report", "--db", s.DB).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	if out, err := exec.Command(tesseraBinary(t), "report", "live.daily", "2025-01-05", "--server", s.URL, "--token", strings.TrimSpace(strings.SplitN(string(tok), "\n", 2)[0])).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	ctx := s.browser(t)
	launchFromURL(t, ctx, s, "asset=live.daily&start=2025-01-05&end=2025-01-05")
	// The partition is "in progress" (and its page live) from when its run
	// starts: opened before that (launched is not started, on a loaded
	// machine) the page would read Missing and not follow anything. The
	// backfill page says when the run is going; the build then lasts 6 s,
	// time enough to open the partition's page.
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="count-running"] b')||{}).innerText === "1"`, 30*time.Second, "the partition's run to start")
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/assets/live.daily/partitions/2025-01-05"),
		chromedp.WaitVisible(css(`[data-testid="partition-status"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st := testkit.JS(t, ctx, `document.querySelector('[data-testid="partition-status"]').innerText.trim()`); !strings.Contains(st, "In progress") {
		t.Fatalf("the partition of a running backfill reads %q, want In progress", st)
	}
	if note := testkit.JS(t, ctx, `(document.querySelector('[data-testid="partition-live-note"]')||{}).innerText||""`); !strings.Contains(note, "follows the build") {
		t.Errorf("live note %q", note)
	}
	if got := testkit.JS(t, ctx, `[...document.querySelectorAll('[data-testid="instance"]')].map(r => r.innerText).join(" | ")`); !strings.Contains(got, "In progress") {
		t.Errorf("history while building: %q, want the instance in progress", got)
	}
	testkit.Screenshot(t, ctx, "partition-building")
	if err := chromedp.Do(ctx, chromedp.SendKeys(css(`[data-testid="taint-form"] input[name="reason"]`), "half typed")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="partition-status"]').innerText.includes("Materialized")`, 30*time.Second, "the status to turn Materialized without a reload")
	testkit.WaitJS(t, ctx, `[...document.querySelectorAll('[data-testid="instance"]')].some(r => r.innerText.includes("Materialized"))`, 30*time.Second, "the finished instance in the history")
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="taint-form"] input[name="reason"]').value`); got != "half typed" {
		t.Errorf("the taint reason being typed became %q", got)
	}
	if live := testkit.JS(t, ctx, `String(document.querySelector('[data-testid="partition-live"]').hasAttribute("hx-trigger"))`); live != "false" {
		t.Errorf("the page still polls after the build ended")
	}
	testkit.Screenshot(t, ctx, "partition-built")
}

// TestBrowserPartitionLastAttemptRunIsALink: the run of a partition's last
// attempt (built by a backfill) is a link, as the history's are, and
// following it opens that run's page.
func TestBrowserPartitionLastAttemptRunIsALink(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: testkit.Assets(testkit.Asset("link.daily", testkit.Daily, "executor: {demo: {duration: 1ms}}"))})
	eng := env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	bf := testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{"link.daily"}, Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	testkit.Eventually(t, 20*time.Second, "the backfill to succeed", func() bool {
		b, err := env.Store.Backfill(t.Context(), bf.ID)
		return err == nil && b.State == db.BackfillSucceeded
	})
	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/assets/link.daily/partitions/2025-01-01"), chromedp.WaitVisible(css(`[data-testid="last-attempt"]`))); err != nil {
		t.Fatal(err)
	}
	href := testkit.JS(t, ctx, `(document.querySelector('[data-testid="instance-run"]') || {}).getAttribute?.('href') || ""`)
	if !strings.HasPrefix(href, "/runs/") {
		t.Fatalf("the history links no run (%q): the test needs a partition a backfill built", href)
	}
	if got := testkit.JS(t, ctx, `(document.querySelector('[data-testid="last-attempt"] a') || {}).getAttribute?.('href') || ""`); got != href {
		t.Fatalf("the last attempt's run links to %q, want %q (the history's link)", got, href)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="last-attempt"] a`, 10*time.Second)
	testkit.WaitJSEquals(t, ctx, `location.pathname`, href, 5*time.Second, "the last attempt's run link to open the history's run page")
}
