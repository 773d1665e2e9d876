package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumPath finds the Chromium binary (.ci/run installs Debian's chromium).
func ChromiumPath(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("TESSERA_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("Chromium not found: browser tests need it; .ci/run installs Debian's chromium (or set TESSERA_CHROMIUM)")
	return ""
}

// browserOptions are the allocator options of every test browser.
func browserOptions(t testing.TB) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 800),
	)
}

// browserTimeout bounds one test's use of its browser (the whole test: a
// long flow at 390 and 1280 px took 160 s under make test's load, and 194 s
// on a slow CI machine, its steps each well within their own waits).
const browserTimeout = 5 * time.Minute

// shared is the test binary's one Chromium, started at the first Browser
// of a test without extra options (starting a Chromium per test cost a
// second or more of CPU each on the 2-core CI machine). Each test gets a
// new browser context in it (its own cookies, storage and cache, like a
// fresh incognito window) with a tab of its own; TestMain stops it (Main).
var shared struct {
	mu     sync.Mutex
	ctx    context.Context // the first tab's context; its Browser is shared
	cancel func()
}

// Browser starts a headless Chromium for the test (a new browser context
// in the package's shared Chromium; with extra allocator options a
// Chromium of its own) and returns a chromedp context of a new tab that is
// cancelled (the tab and its browser context closed) when the test ends.
func Browser(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if len(extra) > 0 {
		return ownBrowser(t, extra)
	}
	var errs []string
	for try := 1; try <= 3; try++ {
		parent, err := sharedBrowser(t)
		if err != nil {
			errs = append(errs, fmt.Sprintf("try %d: %v", try, err))
			continue
		}
		tab, cancelTab := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
		ctx, cancelT := context.WithTimeout(tab, browserTimeout)
		if err := chromedp.Do(ctx); err != nil {
			cancelT()
			cancelTab()
			errs = append(errs, fmt.Sprintf("try %d: new tab: %v", try, err))
			dropShared(parent) // a browser that cannot open a tab is started again
			continue
		}
		t.Cleanup(func() { cancelT(); cancelTab() })
		watchConsole(t, ctx)
		return ctx
	}
	t.Fatalf("start Chromium (3 tries):\n%s", strings.Join(errs, "\n"))
	return nil
}

// sharedBrowser returns the shared Chromium's first context, starting it
// (again, if it ended) when needed.
func sharedBrowser(t testing.TB) (context.Context, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx != nil && shared.ctx.Err() == nil {
		return shared.ctx, nil
	}
	if shared.cancel != nil {
		shared.cancel()
		shared.ctx, shared.cancel = nil, nil
	}
	// Not a test's: it outlives the test that starts it.
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), browserOptions(t)...)
	ctx, cancelB := chromedp.NewContext(actx)
	// No deadline here: the context of the first Do is the browser's life.
	if err := chromedp.Do(ctx); err != nil {
		cancelB()
		cancelA()
		return nil, err
	}
	shared.ctx, shared.cancel = ctx, func() { cancelB(); cancelA() }
	return ctx, nil
}

// dropShared stops the shared Chromium if it is still the one of ctx.
func dropShared(ctx context.Context) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx == ctx && shared.cancel != nil {
		shared.cancel()
		shared.ctx, shared.cancel = nil, nil
	}
}

// StopBrowser stops the shared Chromium (Main calls it when the tests end).
func StopBrowser() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cancel != nil {
		shared.cancel()
		shared.ctx, shared.cancel = nil, nil
	}
}

// ownBrowser starts a Chromium of the test's own, with extra options
// (flags such as ignore-certificate-errors hold for a whole browser).
func ownBrowser(t testing.TB, extra []chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(browserOptions(t), chromedp.UserDataDir(t.TempDir()))
	opts = append(opts, extra...)
	// A Chromium that fails to start (CI once saw its launcher script die
	// on a loaded machine before the browser ran) is started again, twice
	// at most; what it printed is kept for the failure message.
	var errs []string
	for try := 1; try <= 3; try++ {
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelB := chromedp.NewContext(actx)
		ctx, cancelT := context.WithTimeout(ctx, browserTimeout)
		if err := chromedp.Do(ctx); err != nil {
			cancelT()
			cancelB()
			cancelA()
			errs = append(errs, fmt.Sprintf("try %d: %v", try, err))
			continue
		}
		t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
		watchConsole(t, ctx)
		return ctx
	}
	t.Fatalf("start Chromium (3 tries):\n%s", strings.Join(errs, "\n"))
	return nil
}

// watchConsole fails the test, when it ends, for every exception a page
// did not catch and every console.error of Tessera's own script; htmx's
// reports of its own events (a live stream that closed, an aborted
// request: "htmx:…" or an Event object) are logged only.
func watchConsole(t testing.TB, ctx context.Context) {
	var mu sync.Mutex
	var errs []string
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type != cdpruntime.ConsoleAPICalledTypeError {
				return
			}
			var parts []string
			for _, a := range e.Args {
				if len(a.Value) > 0 {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			msg = "console.error: " + strings.Join(parts, " ")
		case *cdpruntime.EventExceptionThrown:
			msg = "uncaught: " + e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
		default:
			return
		}
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("listen to the browser console: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			if strings.HasPrefix(e, `console.error: "htmx:`) || e == `console.error: "[object Event]"` || strings.HasPrefix(e, "console.error: Event") {
				t.Logf("browser console (htmx): %s", e)
				continue
			}
			t.Errorf("browser %s", e)
		}
	})
}

// Screenshot saves a full-page PNG named name under dir (the test's output
// directory: TESSERA_SCREENSHOTS or a temporary one) and fails if it is empty.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("TESSERA_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var png []byte
	var err error
	// Chromium measures the page for a full screenshot; caught while it
	// lays out a swap, it answers "Cannot take screenshot with 0 width"
	// (seen on a loaded machine): a moment later it can.
	Eventually(t, 5*time.Second, "a screenshot "+name+" of a laid-out page", func() bool {
		png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is PNG; below it Chromium encodes JPEG
		return err == nil || !strings.Contains(err.Error(), "with 0 ")
	})
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot %s is empty (%d bytes)", name, len(png))
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitJS polls the JavaScript boolean expression expr in the page of ctx
// until it holds (at most timeout; what names it in the failure, which
// logs the last evaluation error and the start of the page's text).
func WaitJS(t testing.TB, ctx context.Context, expr string, timeout time.Duration, what string) {
	t.Helper()
	var err error
	held := false
	defer func() {
		if !held { // Eventually failed: show the page
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('main')||document.body).innerText.slice(0, 1500)`))
			t.Logf("last evaluation error: %v; page:\n%s", err, page)
		}
	}()
	Eventually(t, timeout, what, func() bool {
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		return err == nil && ok
	})
	held = true
}

// JS evaluates the JavaScript string expression expr in the page of ctx.
func JS(t testing.TB, ctx context.Context, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitJSEquals polls the JavaScript string expression expr in the page of
// ctx until it returns want (at most timeout; what names it in the
// failure, which says the last value read or the last evaluation error). A
// read that fails (the element not in the page yet, the browser between two
// documents) counts as not yet: for values a page shows once it has loaded
// or once a live section has been updated, instead of reading them once.
func WaitJSEquals(t testing.TB, ctx context.Context, expr, want string, timeout time.Duration, what string) {
	t.Helper()
	var got string
	var err error
	held := false
	defer func() {
		if !held { // Eventually failed: say what the page showed
			t.Logf("%s: want %q, the last read gave %q (error: %v)", what, want, got, err)
		}
	}()
	Eventually(t, timeout, what, func() bool {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		return err == nil && got == want
	})
	held = true
}

// MarkPage marks the window of the page in ctx before an action that leads
// to another page (a click on a link or a form's button, a form's submit, a
// key press): WaitNewPage then waits for a page without the mark.
func MarkPage(t testing.TB, ctx context.Context) {
	t.Helper()
	JS(t, ctx, `String(window.__tesseraLeaving = true)`)
}

// WaitNewPage waits until the browser shows a document other than the one
// MarkPage marked and that document has loaded (readyState complete: parsed,
// its scripts run, its images loaded). Before, a read could land on the old
// page (whose live parts can already show the change through its stream),
// between the two documents (nothing there), or on a half-parsed new one.
func WaitNewPage(t testing.TB, ctx context.Context, timeout time.Duration, what string) {
	t.Helper()
	WaitJS(t, ctx, `window.__tesseraLeaving === undefined && document.readyState === "complete"`, timeout, what)
}

// ClickAndLoad clicks sel, a button that submits a form or a link, and waits
// until the page it leads to has loaded (MarkPage, Click, WaitNewPage). The
// page clicked on marks its window first, so a read of the old page (whose
// live parts can already show the change through its stream) cannot pass
// for the new one, and no read lands while the browser is between the two
// documents.
func ClickAndLoad(t testing.TB, ctx context.Context, sel string, timeout time.Duration) {
	t.Helper()
	MarkPage(t, ctx)
	Click(t, ctx, sel, timeout)
	WaitNewPage(t, ctx, timeout, "the page after a click on "+sel)
}

// Click clicks the first element matching the CSS selector sel, again when
// the page replaced the element between finding and clicking it (a live
// section swapped in by htmx: chromedp then answers "Could not find node
// with given id"), as a user clicks the button that is there now; it fails
// the test on any other error or after timeout.
func Click(t testing.TB, ctx context.Context, sel string, timeout time.Duration) {
	t.Helper()
	var err error
	Eventually(t, timeout, "a click on "+sel, func() bool {
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		if err != nil && !strings.Contains(err.Error(), "Could not find node") {
			t.Fatalf("click %s: %v", sel, err)
		}
		return err == nil
	})
}
