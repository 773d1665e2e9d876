package web_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The backfill browser flows run against the real binary: built once, then
// started with `serve` on a temporary database and a small workspace of demo
// and command executors, with users created by `tessera user add`.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func tesseraBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binPath, buildErr = testkit.PrebuiltBinary(); binPath != "" || buildErr != nil {
			return // make test built it once for web, cli and e2e
		}
		dir, err := os.MkdirTemp("", "tessera-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tessera")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type liveServer struct {
	URL, DB, Dir string
}

const flowPassword = "flow password 123"

// startServer runs `tessera serve` on a free port with ws, extra serve
// flags and an operator "op" created with the CLI; it stops the server when
// the test ends. With --tls-cert among extra, its URL is https.
func startBinaryServer(t *testing.T, ws string, extra ...string) *liveServer {
	t.Helper()
	bin := tesseraBinary(t)
	dir := t.TempDir()
	s := &liveServer{DB: filepath.Join(dir, "tessera.db"), Dir: dir}
	wsPath := filepath.Join(dir, "workspace.yaml")
	if err := os.WriteFile(wsPath, []byte(ws), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(flowPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "migrate", "--db", s.DB).CombinedOutput(); err != nil {
		t.Logf("migrate: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "user", "add", "op", "--role", "operator", "--password-file", pw, "--db", s.DB).CombinedOutput(); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--db", s.DB, "--workspace", wsPath, "--addr", addr, "--seed-demo", "never", "--login-limit", "off"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("serve log (tail):\n%s", logTail(string(b), 3000))
		}
	})
	s.URL = "http://" + addr
	client := http.DefaultClient
	if slices.Contains(extra, "--tls-cert") {
		s.URL = "https://" + addr
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the test's own self-signed certificate
	}
	testkit.Eventually(t, 30*time.Second, "serve to become healthy", func() bool {
		resp, err := client.Get(s.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

func logTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// css selects by a CSS selector, for the browser tests.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// browser is a new headless browser (with extra options) with the
// operator "op" of startBinaryServer signed in.
func (s *liveServer) browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	ctx := testkit.Browser(t, extra...)
	testkit.BrowserLogin(t, ctx, s.URL, "op", flowPassword)
	return ctx
}

// streamsOpen is true when the page has live sections and every one's
// EventSource is open (the htmx sse extension keeps it in its internal data).
const streamsOpen = `(function(){var els=document.querySelectorAll('[sse-connect]');if(!els.length){return false}
for(var i=0;i<els.length;i++){var d=els[i]['htmx-internal-data'];if(!d||!d.sseEventSource||d.sseEventSource.readyState!==EventSource.OPEN){return false}}return true})()`

const stateIs = `(document.querySelector('[data-testid="state-badge"]')||{}).dataset && document.querySelector('[data-testid="state-badge"]').dataset.state === %q`

// followLaunchedBackfill clicks the notice's link to bf, the backfill an
// action launched, waits for it to succeed and wants its "launched by"
// link (data-testid by) to lead back to back.
func followLaunchedBackfill(t *testing.T, ctx context.Context, bf, by, back string) {
	t.Helper()
	testkit.Click(t, ctx, `[data-testid="notice-link"]`, 30*time.Second)
	// A click measured before the page moved the link lands beside it on a
	// loaded machine (the server then saw no request for the backfill in
	// 20 s): while the page still shows the link, it is followed again.
	clicked := time.Now()
	testkit.Eventually(t, 30*time.Second, "the launched backfill's page", func() bool {
		// (A read in the middle of the navigation fails: read again.)
		if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err == nil && path == bf {
			return true
		}
		if time.Since(clicked) > 3*time.Second {
			_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('[data-testid="notice-link"]') || {click() {}}).click(), true`))
			clicked = time.Now()
		}
		return false
	})
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED"), 30*time.Second, "the backfill SUCCEEDED")
	// The page may still be parsing when its badge already says SUCCEEDED:
	// the link is awaited, then its target compared.
	link := fmt.Sprintf(`document.querySelector('[data-testid="launched-by"] [data-testid=%q]')`, by)
	testkit.WaitJS(t, ctx, `document.readyState === "complete" && !!`+link, 30*time.Second, "the backfill's launched-by link ("+by+")")
	if got := testkit.JS(t, ctx, link+`.getAttribute("href")`); got != back {
		t.Fatalf("the backfill links back to %q, want %q", got, back)
	}
}

const flowWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  flow.daily:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 100ms}}
  flow.slow:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 700ms}}
  flow.long:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 60s}}
  flow.cmd:
    partitions: {static: [good1, good2, bad1, good3, bad2]}
    code_version: v1
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *bad*) if [ -e "$FLOW_FAIL" ]; then echo "failing $TESSERA_PARTITIONS"; exit 1; fi;; esac; echo "built $TESSERA_PARTITIONS"']
      shell: true
      env: {FLOW_FAIL: "%s"}
`

// bfFlowSession starts the binary on the flow workspace (extra: more
// flags) and signs a fresh browser in; it returns both.
func bfFlowSession(t *testing.T, extra ...string) (*liveServer, context.Context) {
	t.Helper()
	s := startBinaryServer(t, flowWS(t.TempDir()), extra...)
	ctx := s.browser(t)
	return s, ctx
}

// bfSelectFrom opens the asset page at url, turns on its selection mode and
// clicks the tile whose link ends with keyEnd.
func bfSelectFrom(t *testing.T, ctx context.Context, url, keyEnd string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(`[data-testid="selection-bar"]`)),
		chromedp.Click(css(`[data-testid="select-mode"]`)),
		chromedp.Click(css(`[data-testid="grid"] a[href$="`+keyEnd+`"]`)),
	); err != nil {
		t.Fatal(err)
	}
}

// bfShiftClick shift-clicks the grid tile whose link ends with keyEnd.
func bfShiftClick(t *testing.T, ctx context.Context, keyEnd string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="grid"] a[href$="`+keyEnd+`"]').dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, shiftKey: true}))`)); err != nil {
		t.Fatal(err)
	}
}

func flowWS(dir string) string { return fmt.Sprintf(flowWorkspace, filepath.Join(dir, "fail")) }

// Flow 1: select a range on the grid → new backfill with the range → the
// preview shows the right count → launch → progress reaches 100% without
// reloading.
func TestBrowserBackfillFromGridSelection(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	bfSelectFrom(t, ctx, s.URL+"/assets/flow.daily?from=2025-01-01&to=2025-01-31", "2025-01-03")
	bfShiftClick(t, ctx, "2025-01-09") // the last tile
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="selection-n"]')||{}).dataset?.n === "7"`, 30*time.Second, "the selection count 7")
	if got := testkit.JS(t, ctx, `location.pathname`); got != "/assets/flow.daily" {
		t.Fatalf("clicking tiles in selection mode navigated to %s", got)
	}
	// The bar's button submits a plain GET form: the form is read once its
	// page has loaded (its Launch form visible, the range fields after it
	// could still be unparsed).
	testkit.ClickAndLoad(t, ctx, `[data-testid="backfill-selection"]`, 30*time.Second)
	testkit.WaitJSEquals(t, ctx, `location.pathname + " " + document.querySelector('[data-testid="start"]').value + ".." + document.querySelector('[data-testid="end"]').value`,
		"/backfills/new 2025-01-03..2025-01-09", 30*time.Second, "the new backfill form prefilled with the selection's range")
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="preview-partitions"]')||{}).dataset?.n === "7"`, 30*time.Second, "the preview of 7 partitions")
	// The preview follows the form (debounced htmx request).
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(function(){ var e = document.querySelector('[data-testid="chunk-size"]'); e.value = "2"; e.dispatchEvent(new Event("input", {bubbles: true})); })()`)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="preview-chunks"]')||{}).dataset?.n === "4"`, 30*time.Second, "the preview of 4 chunks")
	testkit.Click(t, ctx, `[data-testid="launch"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `location.pathname.startsWith("/backfills/bf_")`, 30*time.Second, "the backfill page")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`[data-testid="progress-pct"]`)), chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED")+` && document.querySelector('[data-testid="progress-pct"]').innerText === "100%"`, 30*time.Second, "100% and SUCCEEDED")
	if testkit.JS(t, ctx, `String(window.__noReload)`) != "1" {
		t.Fatal("the page reloaded instead of updating live")
	}
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="outcome-tile"][data-state="materialized"]').length)`); n != "7" {
		t.Errorf("%s materialized partition tiles, want 7", n)
	}
	// Finished, the page no longer says it updates by itself (its stream
	// said "done" and closed).
	testkit.WaitJS(t, ctx, `!document.querySelector('[data-testid="refresh"]')`, 30*time.Second, "the 'updates by itself' line to go once finished")
	testkit.Screenshot(t, ctx, "backfill-from-grid")
	// Readable at phone width: nothing wider than the screen but scroll boxes.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(css(`[data-testid="progress-bar"]`))); err != nil {
		t.Fatal(err)
	}
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 400 {
		t.Errorf("the backfill page is %dpx wide at a 390px screen (%v)", w, err)
	}
	testkit.Screenshot(t, ctx, "backfill-phone")
}

// Selecting on the grid orders the range by the partitions' positions, not
// by their keys' text: on a static asset whose keys do not sort as text
// (good1, good2, bad1, good3, bad2), clicking good2 then shift-clicking
// bad1 selects good2..bad1 (before, "bad1" < "good2" made it an inverted,
// refused range), and every tile of the range is marked.
func TestBrowserGridSelectionFollowsPartitionOrder(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	bfSelectFrom(t, ctx, s.URL+"/assets/flow.cmd", "/good2")
	bfShiftClick(t, ctx, "/bad1")
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="selection-n"]')||{}).dataset?.n === "2"`, 30*time.Second, "the selection count 2")
	bar := `document.querySelector('[data-testid="selection-bar"]')`
	if got := testkit.JS(t, ctx, bar+`.elements.start.value + ".." + `+bar+`.elements.end.value`); got != "good2..bad1" {
		t.Fatalf("selection %s, want good2..bad1", got)
	}
	// Backwards, and every tile between marked: click bad2, shift-click good1.
	testkit.Click(t, ctx, `[data-testid="grid"] a[href$="/bad2"]`, 30*time.Second)
	bfShiftClick(t, ctx, "/good1")
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="selection-n"]')||{}).dataset?.n === "5"`, 30*time.Second, "the selection count 5")
	if got := testkit.JS(t, ctx, bar+`.elements.start.value + ".." + `+bar+`.elements.end.value`); got != "good1..bad2" {
		t.Fatalf("selection %s, want good1..bad2", got)
	}
	if n := testkit.JS(t, ctx, `String(document.querySelectorAll('[data-testid="grid"] a.sel').length)`); n != "5" {
		t.Errorf("%s tiles marked, want 5", n)
	}
	if got := testkit.JS(t, ctx, `location.pathname`); got != "/assets/flow.cmd" {
		t.Fatalf("clicking tiles in selection mode navigated to %s", got)
	}
}

func launchFromURL(t *testing.T, ctx context.Context, s *liveServer, query string) string {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/backfills/new?"+query),
		chromedp.WaitVisible(css(`[data-testid="launch"]`)),
		chromedp.Click(css(`[data-testid="launch"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitJS(t, ctx, `location.pathname.startsWith("/backfills/bf_")`, 30*time.Second, "the backfill page")
	return testkit.JS(t, ctx, `location.pathname`)
}

func bfPlanned(t *testing.T, ctx context.Context) string {
	return testkit.JS(t, ctx, `document.querySelector('[data-testid="count-chunks"] b').innerText + "|" + document.querySelector('[data-testid="chunk-section"] form .muted').innerText`)
}

// Flow 2: launch a long backfill → pause → it stops planning → resume →
// cancel with terminate → canceled.
func TestBrowserPauseResumeCancel(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-06-30&chunk_size=1&max_concurrent_runs=2")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "RUNNING")
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-pause"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "PAUSED"), 30*time.Second, "PAUSED")
	// Paused: active chunks finish, no new chunk is planned. The counts and
	// the chunk table are two live sections, each fetched on the stream's
	// update: "before" is read once neither has a fetch under way (htmx marks
	// a section fetching with htmx-request), or a chunk table still on its way
	// would pass for planning during the pause.
	testkit.WaitJS(t, ctx, `document.querySelector('[data-testid="count-running"] b').innerText.trim() === "0" && !document.querySelector('.htmx-request')`, 30*time.Second, "the active chunks to finish")
	before := bfPlanned(t, ctx)
	// A sleep: that nothing is planned shows only as time passing (five controller ticks).
	time.Sleep(time.Second)
	if after := bfPlanned(t, ctx); after != before {
		t.Fatalf("planning went on while paused: %s then %s", before, after)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-resume"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "RUNNING again")
	testkit.WaitJS(t, ctx, fmt.Sprintf(`%q !== (document.querySelector('[data-testid="count-chunks"] b').innerText + "|" + document.querySelector('[data-testid="chunk-section"] form .muted').innerText)`, before), 30*time.Second, "planning to go on after resume")
	bfCancelTerminate(t, ctx)
	// The state badge can read CANCELED on the page the cancel was made from
	// (its stream) while the browser is still loading the page the form
	// redirects to: poll for the new page's parts rather than read them once.
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="timeline"]')||{innerText: ""}).innerText.includes("terminate")`, 30*time.Second, "the timeline to show the cancel with terminate")
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="actions"]') && document.querySelectorAll('[data-testid="actions"] button, [data-testid="actions"] summary').length === 0`, 30*time.Second, "a canceled backfill to show no buttons")
	testkit.Screenshot(t, ctx, "backfill-canceled")
}

// Flow 2b: a graceful cancel waits for the running chunks (CANCELING); the
// "Terminate running chunks" button escalates it and ends them.
func TestBrowserCancelThenTerminate(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	launchFromURL(t, ctx, s, "asset=flow.long&start=2025-01-01&end=2025-01-10&chunk_size=1&max_concurrent_runs=2")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "RUNNING")
	bfCancel(t, ctx, false)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="action-terminate"]')`, 30*time.Second, "the Terminate button")
	// A sleep: that the 60 s chunks are NOT ended shows only as time passing (five controller ticks).
	time.Sleep(time.Second)
	if !strings.Contains(testkit.JS(t, ctx, `document.querySelector('[data-testid="state-badge"]').dataset.state`), "CANCELING") {
		t.Fatal("a graceful cancel should wait for the 60 s chunks")
	}
	testkit.Screenshot(t, ctx, "backfill-canceling")
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-terminate"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "CANCELED"), 30*time.Second, "CANCELED after terminate")
	// The 8 chunks never planned are counted as canceled, not pending.
	testkit.WaitJS(t, ctx, `(document.querySelector('[data-testid="count-canceled"] b')||{}).innerText === "10" && !document.querySelector('[data-testid="count-pending"]')`, 30*time.Second, "10 partitions counted canceled")
	// The buttons are a live section of their own, fetched apart from the
	// state badge's: polled, not read once right after the badge changed.
	testkit.WaitJSEquals(t, ctx, `String(document.querySelectorAll('[data-testid="actions"] button, [data-testid="actions"] summary').length)`, "0", 30*time.Second, "a canceled backfill to show no buttons")
}

// Flow 3: a backfill with failing partitions → Retry failed → the child holds
// exactly the failed partitions and succeeds.
func TestBrowserRetryFailed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failFile := filepath.Join(dir, "fail")
	if err := os.WriteFile(failFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startBinaryServer(t, flowWS(dir))
	ctx := s.browser(t)
	launchFromURL(t, ctx, s, "asset=flow.cmd&chunk_size=1&max_concurrent_runs=5")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "FAILED"), 30*time.Second, "FAILED")
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="count-failed"] b').innerText`); got != "2" {
		t.Fatalf("%s failed partitions, want 2", got)
	}
	if err := os.Remove(failFile); err != nil {
		t.Fatal(err)
	}
	parent := testkit.JS(t, ctx, `location.pathname`)
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-retry-failed"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(`location.pathname.startsWith("/backfills/bf_") && location.pathname !== %q`, parent), 30*time.Second, "the child backfill page")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "SUCCEEDED"), 30*time.Second, "the child SUCCEEDED")
	// The chunk table is a live section of its own, updated apart from the
	// state badge: it can still show the child's first page (no chunk yet)
	// when the badge says SUCCEEDED.
	testkit.WaitJSEquals(t, ctx, `Array.from(document.querySelectorAll('[data-testid="chunk-row"] td:nth-child(3)')).map(td => td.firstChild.textContent.trim()).sort().join(",")`,
		"bad1,bad2", 30*time.Second, "the child's chunks to build exactly bad1,bad2")
	if testkit.JS(t, ctx, `document.querySelector('[data-testid="parent-link"]').getAttribute("href")`) != parent {
		t.Error("the child does not link to its parent")
	}
	testkit.Screenshot(t, ctx, "backfill-retry-child")
}

// Flow 4: a stale page clicking Pause after another tab paused and resumed
// gets the conflict message, and nothing changes.
func TestBrowserStalePauseConflict(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	path := launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-12-31&chunk_size=1&max_concurrent_runs=1")
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "RUNNING")
	// Tab A: a static copy of the page (no live updates), as a laptop back from sleep.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+path+"?live=0"), chromedp.WaitVisible(css(`[data-testid="action-pause"]`))); err != nil {
		t.Fatal(err)
	}
	// Tab B pauses and resumes.
	tabB, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tabB, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(css(`[data-testid="action-pause"]`))); err != nil {
		t.Fatal(err)
	}
	// Its Pause is a form: its stream can show PAUSED (and Resume) on the
	// page clicked on while the browser loads the page the form leads to,
	// and Resume clicked there would be lost, or the version read from a
	// page being left.
	testkit.ClickAndLoad(t, tabB, `[data-testid="action-pause"]`, 30*time.Second)
	testkit.WaitJS(t, tabB, fmt.Sprintf(stateIs, "PAUSED"), 30*time.Second, "tab B: PAUSED")
	testkit.ClickAndLoad(t, tabB, `[data-testid="action-resume"]`, 30*time.Second)
	testkit.WaitJS(t, tabB, fmt.Sprintf(stateIs, "RUNNING"), 30*time.Second, "tab B: RUNNING")
	version := testkit.JS(t, tabB, `document.querySelector('[data-testid="backfill-summary"]').dataset.version`)
	// Tab A, stale, clicks Pause.
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-pause"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="message"]')`, 30*time.Second, "the conflict message")
	msg := testkit.JS(t, ctx, `document.querySelector('[data-testid="message"]').innerText`)
	if !strings.Contains(msg, "Someone changed this backfill") {
		t.Fatalf("message %q", msg)
	}
	// The message stays while live updates keep arriving: mark the live
	// summary, wait until an update replaced it.
	testkit.JS(t, ctx, `document.querySelector('#bf-summary').dataset.seen = "1"; ""`)
	testkit.WaitJS(t, ctx, `document.querySelector('#bf-summary') !== null && document.querySelector('#bf-summary').dataset.seen !== "1"`, 30*time.Second, "a live update of the summary")
	if testkit.JS(t, ctx, `String(!!document.querySelector('[data-testid="message"]'))`) != "true" {
		t.Fatal("a live update wiped the conflict message")
	}
	if testkit.JS(t, ctx, `document.querySelector('[data-testid="state-badge"]').dataset.state`) != "RUNNING" {
		t.Error("the stale Pause changed the state")
	}
	if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="backfill-summary"]').dataset.version`); atoi(got) < atoi(version) {
		t.Errorf("the reloaded page shows version %s, older than %s", got, version)
	}
	testkit.Screenshot(t, ctx, "backfill-stale-conflict")
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// The backfills list and an asset page's active backfills update by
// themselves: a backfill launched from another tab appears in both, and its
// end shows (the list row turns SUCCEEDED; the asset page's section goes).
func TestBrowserListsUpdateLive(t *testing.T) {
	t.Parallel()
	s, ctx := bfFlowSession(t)
	list, cancelList := chromedp.NewContext(ctx)
	defer cancelList()
	asset, cancelAsset := chromedp.NewContext(ctx)
	defer cancelAsset()
	overview, cancelOverview := chromedp.NewContext(ctx)
	defer cancelOverview()
	if err := chromedp.Do(overview, chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(css(`[data-testid="active-backfills-live"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(list, chromedp.Navigate(s.URL+"/backfills?asset=flow.slow"), chromedp.WaitVisible(css(`[data-testid="backfills-empty"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(asset, chromedp.Navigate(s.URL+"/assets/flow.slow"), chromedp.WaitVisible(css(`[data-testid="asset-key"]`))); err != nil {
		t.Fatal(err)
	}
	if n := testkit.JS(t, asset, `String(document.querySelectorAll('[data-testid="asset-active-backfills"]').length)`); n != "0" {
		t.Fatalf("an asset with no backfill shows %s active sections", n)
	}
	// Let the tabs' streams connect before the launch.
	testkit.WaitJS(t, list, `!!document.querySelector('[data-testid="backfills-live"]')`, 30*time.Second, "the live list")
	for name, tab := range map[string]context.Context{"list": list, "asset page": asset, "overview": overview} {
		testkit.WaitJS(t, tab, streamsOpen, 30*time.Second, "the "+name+"'s stream to connect")
	}
	// Twelve runs of 700 ms, one at a time: active for about 8 s, long
	// enough for a slow machine's test to see it on every tab before it
	// ends (three runs, 2 s, could end first, as one did under load in
	// TestBrowserHTTP2LiveTabs), short enough to wait
	// for its end.
	path := launchFromURL(t, ctx, s, "asset=flow.slow&start=2025-01-01&end=2025-01-12&chunk_size=1&max_concurrent_runs=1")
	id := strings.TrimPrefix(path, "/backfills/")
	row := fmt.Sprintf(`document.querySelector('[data-testid="backfill-row"][data-id=%q]')`, id)
	testkit.WaitJS(t, list, row+` !== null`, 30*time.Second, "the new backfill in the list, without a reload")
	testkit.WaitJS(t, asset, `document.querySelector('[data-testid="asset-active-backfills"] [data-testid="backfill-row"]') !== null`, 30*time.Second, "the new backfill on the asset page")
	testkit.WaitJS(t, overview, `document.querySelector('[data-testid="active-backfills"] [data-testid="backfill-row"]') !== null`, 30*time.Second, "the new backfill on the overview, which had none at load")
	testkit.WaitJS(t, list, row+`.dataset.state === "SUCCEEDED"`, 30*time.Second, "the list row to turn SUCCEEDED")
	testkit.WaitJS(t, asset, `document.querySelector('[data-testid="asset-active-backfills"]') === null`, 30*time.Second, "the asset page's active section to go")
	if got := testkit.JS(t, list, `location.pathname + location.search`); got != "/backfills?asset=flow.slow" {
		t.Fatalf("the list tab moved to %s", got)
	}
}

// bfCancelTerminate cancels the backfill on the page with "terminate running
// chunks" ticked, confirms, and waits for CANCELED.
func bfCancelTerminate(t *testing.T, ctx context.Context) {
	t.Helper()
	bfCancel(t, ctx, true)
}

// bfCancel cancels the backfill on the page (terminate: with "terminate
// running chunks" ticked), confirms, and waits for CANCELED (terminated) or
// CANCELING (waiting for its running chunks).
func bfCancel(t *testing.T, ctx context.Context, terminate bool) {
	t.Helper()
	// The buttons are a live section of their own, fetched after the state
	// badge when the state changes: opened before that fetch lands, the
	// Cancel disclosure is swapped for a closed one and the confirm click
	// hits nothing. Wait until the buttons are those of the state shown
	// (then they are swapped again only when the state changes; a running
	// backfill's other sections keep fetching, so no wait for quiet).
	testkit.WaitJS(t, ctx, `(() => {
		const a = document.querySelector('[data-testid="actions-live"]'), s = document.querySelector('[data-testid="backfill-summary"]');
		return !!a && !!s && a.dataset.version === s.dataset.version;
	})()`, 30*time.Second, "the buttons of the state shown")
	acts := []chromedp.Action[chromedp.Void]{chromedp.Click(css(`[data-testid="action-cancel"]`)), chromedp.WaitVisible(css(`[data-testid="confirm-cancel"]`))}
	want := "CANCELING"
	if terminate {
		acts, want = append(acts, chromedp.Click(css(`[data-testid="terminate"]`))), "CANCELED"
	}
	if err := chromedp.Do(ctx, acts...); err != nil {
		t.Fatal(err)
	}
	testkit.ClickAndLoad(t, ctx, `[data-testid="confirm-cancel"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, fmt.Sprintf(stateIs, want), 30*time.Second, want)
}

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
	// Launch swaps the page in through htmx, whose show:window:top scrolls
	// when the swap settles (20 ms after it): the position is polled, not
	// read once right after the new page's parts appeared.
	testkit.WaitJSEquals(t, ctx, `String(window.scrollY)`, "0", 30*time.Second, "the backfill page opened at its top after Launch")
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
		testkit.WaitJS(t, ctx, `window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2`, 30*time.Second, "the page scrolled to its bottom")
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
