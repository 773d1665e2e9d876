package web_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The layout checks of the UI audit: at a phone's 390 px no page scrolls
// sideways and nothing that matters is cropped or overlapped; at 1280 px pills
// stay on one line. Each check measures the rendered page in Chromium.

const longTitle = "ML features H1 2026 rebuild after the feature store schema migration (ticket DATA-4821)"

// phoneEnv is the seeded demo workspace with an engine that finishes every
// chunk at once and three finished backfills (one long-titled, one untitled).
func phoneEnv(t *testing.T) (*testkit.Env, map[string]string) {
	t.Helper()
	env := testkit.New(t, testkit.Options{Seed: true})
	eng := env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	ids := map[string]string{}
	for name, req := range map[string]jobs.Request{
		"long": {Assets: []string{"ml.features"}, Title: longTitle, ChunkSize: 3, MaxConcurrentRuns: 4,
			Selector: jobs.Selector{Type: "range", Start: "2026-01-01|eu", End: "2026-01-10|apac"}},
		"untitled": {Assets: []string{"raw.events"}, ChunkSize: 2, MaxConcurrentRuns: 4,
			Selector: jobs.Selector{Type: "range", Start: "2026-11-01-00:00", End: "2026-11-01-23:00"}},
		"audit": {Assets: []string{"raw.events"}, Title: "Audit backfill nov 1-4", ChunkSize: 6, MaxConcurrentRuns: 4,
			Selector: jobs.Selector{Type: "range", Start: "2026-11-02-00:00", End: "2026-11-02-23:00"}},
	} {
		cr, err := eng.Create(context.Background(), req, "", "admin")
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		ids[name] = cr.Backfill.ID
	}
	for _, id := range ids {
		testkit.Eventually(t, 30*time.Second, "backfill "+id+" to succeed", func() bool {
			b, err := env.Store.Backfill(context.Background(), id)
			return err == nil && b.State == db.BackfillSucceeded
		})
	}
	runs, err := env.Store.Runs(context.Background(), ids["audit"], nil, -1, 1)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of the audit backfill: %v", err)
	}
	ids["run"] = runs[0].ID
	return env, ids
}

// at loads path at width × 900 px and waits for the main element.
func at(t *testing.T, ctx context.Context, url string, width int64) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(url),
		chromedp.WaitReady(css(`main`)),
	)
	if err != nil {
		t.Fatalf("load %s at %d px: %v", url, width, err)
	}
}

// eval runs a script that returns "" when the page is right, else what is wrong.
func eval(t *testing.T, ctx context.Context, what, script string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](script))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != "" {
		t.Errorf("%s: %s", what, got)
	}
}

// evalUntil is eval polled until the script returns "" (at most timeout):
// for what the page's own script sets once an htmx swap has settled, which
// a loaded machine can take longer to do than a fixed pause allows.
func evalUntil(t *testing.T, ctx context.Context, what, script string, timeout time.Duration) {
	t.Helper()
	var got string
	var err error
	defer func() {
		if err != nil || got != "" {
			t.Logf("%s, last read: %s %v", what, got, err)
		}
	}()
	testkit.Eventually(t, timeout, what, func() bool {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](script))
		return err == nil && got == ""
	})
}

const fitsScript = `(() => {
  const d = document.documentElement;
  if (d.scrollWidth <= window.innerWidth) return "";
  const wide = [...document.querySelectorAll("main *, header *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest(".scroll, .grid"))
    .slice(0, 3).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right));
  return "page is " + d.scrollWidth + " px wide in a " + window.innerWidth + " px window; widest: " + wide.join(", ");
})()`

// TestBrowserPhoneNoSidewaysScroll: at 390 px every page fits the window
// (tables scroll or reflow inside it); bars scale instead of cropping their
// segments; the backfills list and the status board show their key columns.
func TestBrowserPhoneNoSidewaysScroll(t *testing.T) {
	t.Parallel()
	env, ids := phoneEnv(t)
	ctx := env.SignedInBrowser(t, auth.RoleAdmin)
	for _, path := range []string{"/", "/assets/raw.events", "/assets/ml.features", "/assets/analytics.daily_events?view=staleness",
		"/assets/raw.events/partitions/2025-01-01-00:00", "/assets/crm.accounts_snapshot/partitions/wonka", "/assets/crm.accounts_snapshot/gaps", "/backfills", "/backfills/" + ids["long"], "/status",
		"/backfills/new?asset=raw.events&start=2026-11-01-00:00&end=2026-11-03-23:00&chunk_size=6", "/settings/tokens", "/admin/users", "/runs/" + ids["run"]} {
		at(t, ctx, env.URL+path, 390)
		eval(t, ctx, path+" at 390 px", fitsScript)
	}

	at(t, ctx, env.URL+"/", 390)
	testkit.Screenshot(t, ctx, "phone-overview")
	eval(t, ctx, "overview health bars", `(() => {
  const bad = [];
  for (const svg of document.querySelectorAll('[data-testid="health-bar"]')) {
    const b = svg.getBoundingClientRect();
    if (b.width < 40 || b.right > window.innerWidth) bad.push("bar " + Math.round(b.left) + "–" + Math.round(b.right));
    for (const r of svg.querySelectorAll("rect")) {
      const rb = r.getBoundingClientRect();
      if (rb.width > 0 && rb.right > b.right + 0.5) bad.push(r.getAttribute("class") + " segment cropped at " + Math.round(b.right) + " (ends " + Math.round(rb.right) + ")");
    }
  }
  return bad.slice(0, 5).join("; ");
})()`)

	visible := func(sel string) string {
		return `((sel) => {
  const els = [...document.querySelectorAll(sel)];
  if (!els.length) return "none found";
  const bad = els.filter(e => { const b = e.getBoundingClientRect(); return !(e.offsetParent || e.closest("svg")) || b.width === 0 || b.left < 0 || b.right > window.innerWidth; });
  return bad.length ? bad.length + " of " + els.length + " hidden or off-screen" : "";
})(` + strconv.Quote(sel) + `)`
	}
	at(t, ctx, env.URL+"/backfills", 390)
	testkit.Screenshot(t, ctx, "phone-backfills")
	for _, sel := range []string{`[data-testid="state-badge"]`, `[data-testid="progress-bar"]`, `[data-testid="state-filter"] button`} {
		eval(t, ctx, "backfills list "+sel, visible(sel))
	}
	at(t, ctx, env.URL+"/status", 390)
	testkit.Screenshot(t, ctx, "phone-status")
	for _, sel := range []string{`[data-testid="fresh-pct"]`, `[data-testid="lag"]`, `[data-testid="latest-fresh"]`} {
		eval(t, ctx, "status board "+sel, visible(sel))
	}
}

// TestBrowserPhoneAssetGrid: at 390 px the partition grid scrolls inside its
// own box; day labels are whole and not under tiles; column headers stay
// apart (hours thinned out, matrix values upright); the last column can be
// scrolled into view with its day label still showing.
func TestBrowserPhoneAssetGrid(t *testing.T) {
	t.Parallel()
	env, ctx := testkit.SeededBrowser(t, auth.RoleViewer)
	const headsApart = `(() => {
  const spans = [...document.querySelectorAll('[data-testid="grid"] .gh:not(.gg) span:not(.rl)')].filter(s => getComputedStyle(s).visibility !== "hidden" && s.textContent);
  if (spans.length < 3) return "only " + spans.length + " headers";
  const box = s => { const r = document.createRange(); r.selectNodeContents(s); return r.getBoundingClientRect(); };
  for (let i = 1; i < spans.length; i++) {
    const a = box(spans[i-1]), b = box(spans[i]);
    if (a.right + 1 > b.left) return "headers " + spans[i-1].textContent + " and " + spans[i].textContent + " touch (" + a.right.toFixed(1) + " > " + b.left.toFixed(1) + ")";
  }
  return "";
})()`
	const labelsClear = `(() => {
  const rows = [...document.querySelectorAll('[data-testid="grid"] .gr:not(.gh)')].slice(0, 20);
  for (const row of rows) {
    const l = row.querySelector(".rl"), t = row.querySelector(".t");
    const r = document.createRange(); r.selectNodeContents(l);
    const text = r.getBoundingClientRect();
    if (l.scrollWidth > l.clientWidth + 0.5) return "label " + l.textContent + " is cut";
    if (text.right > t.getBoundingClientRect().left) return "label " + l.textContent + " runs under its first tile";
  }
  return "";
})()`
	for _, asset := range []string{"raw.events", "ml.features"} {
		at(t, ctx, env.URL+"/assets/"+asset, 390)
		testkit.Screenshot(t, ctx, "phone-grid-"+asset)
		if asset == "ml.features" {
			// A matrix opens scrolled to its newest days, its row labels
			// staying in view; at the start, no label runs under a tile.
			eval(t, ctx, asset+" opens at its newest days", `(() => {
  const g = document.querySelector('[data-testid="grid"]');
  if (g.scrollWidth <= g.clientWidth) return "the matrix does not scroll at 390 px";
  if (g.scrollLeft + g.clientWidth < g.scrollWidth - 1) return "scrolled to " + g.scrollLeft + " of " + (g.scrollWidth - g.clientWidth);
  const l = g.querySelector(".gr:not(.gh) .rl").getBoundingClientRect();
  if (l.left < g.getBoundingClientRect().left - 0.5) return "row label scrolled away";
  g.scrollLeft = 0;
  return "";
})()`)
		}
		eval(t, ctx, asset+" page width", fitsScript)
		eval(t, ctx, asset+" headers", headsApart)
		eval(t, ctx, asset+" labels", labelsClear)
	}
	at(t, ctx, env.URL+"/assets/raw.events", 390)
	eval(t, ctx, "raw.events last column", `(() => {
  const g = document.querySelector('[data-testid="grid"]');
  if (!["auto", "scroll"].includes(getComputedStyle(g).overflowX)) return "grid box does not scroll";
  g.scrollLeft = g.scrollWidth;
  const row = [...g.querySelectorAll('.gr:not(.gh)')][1];
  const tiles = row.querySelectorAll(".t"), last = tiles[tiles.length - 1].getBoundingClientRect(), box = g.getBoundingClientRect();
  if (tiles.length !== 24) return "row has " + tiles.length + " tiles";
  if (last.right > box.right + 0.5 || last.right > window.innerWidth) return "last tile ends at " + last.right + ", box at " + box.right;
  const l = row.querySelector(".rl").getBoundingClientRect();
  if (l.left < box.left - 0.5 || l.width < 20) return "day label scrolled away";
  return "";
})()`)
}

// TestBrowserBackfillTitleAndPills: a long backfill title wraps between words
// (at 390 px) and stands apart from its state badge; state pills stay on one
// line in the list at 1280 px; the preview's first-chunk keys wrap between
// keys, never inside one.
func TestBrowserBackfillTitleAndPills(t *testing.T) {
	t.Parallel()
	env, ids := phoneEnv(t)
	ctx := env.SignedInBrowser(t, auth.RoleOperator)
	const titleScript = `(() => {
  const h = document.querySelector('#bf-summary h1');
  const text = [...h.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
  const s = text.textContent;
  let i = 0;
  for (const w of s.split(/\s+/)) {
    if (!w) continue;
    const at = s.indexOf(w, i); i = at + w.length;
    const r = document.createRange(); r.setStart(text, at); r.setEnd(text, at + w.length);
    const tops = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
    if (tops.size > 1) return "word " + JSON.stringify(w) + " is broken across lines";
  }
  const r = document.createRange(); r.setStart(text, s.trimEnd().length - 1); r.setEnd(text, s.trimEnd().length);
  const end = r.getBoundingClientRect(), badge = h.querySelector('[data-testid="state-badge"]').getBoundingClientRect();
  if (Math.abs(end.top - badge.top) < end.height && badge.left - end.right < 4) return "badge " + (badge.left - end.right).toFixed(1) + " px after the title";
  return "";
})()`
	for _, w := range []int64{390, 1280} {
		at(t, ctx, env.URL+"/backfills/"+ids["long"], w)
		testkit.Screenshot(t, ctx, fmt.Sprintf("bf-title-%d", w))
		eval(t, ctx, fmt.Sprintf("title at %d px", w), titleScript)
	}
	at(t, ctx, env.URL+"/backfills/"+ids["audit"], 1280)
	eval(t, ctx, "short title", titleScript)

	at(t, ctx, env.URL+"/backfills", 1280)
	testkit.Screenshot(t, ctx, "backfills-1280")
	eval(t, ctx, "pills", `(() => {
  const bad = [...document.querySelectorAll('[data-testid="state-badge"]')].filter(b =>
    b.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(b).fontSize) + 6);
  return bad.length ? bad.length + " pills wrap: " + bad[0].textContent : "";
})()`)

	at(t, ctx, env.URL+"/backfills/new?asset=raw.events&start=2026-11-01-00:00&end=2026-11-03-23:00&chunk_size=12", 390)
	testkit.Screenshot(t, ctx, "phone-preview")
	eval(t, ctx, "first-chunk keys", `(() => {
  const keys = [...document.querySelectorAll('[data-testid="preview-first-chunk"] code')];
  if (keys.length < 12) return "only " + keys.length + " keys";
  const broken = keys.filter(k => new Set([...k.getClientRects()].map(b => Math.round(b.top))).size > 1);
  return broken.length ? broken.length + " keys broken across lines, e.g. " + broken[0].textContent : "";
})()`)
}

// TestBrowserBackfillFormFieldErrors: an error of the live preview marks its
// field (aria-invalid, outline) and puts the message next to it; fixing the
// value clears both. A refused launch marks its field the same way.
func TestBrowserBackfillFormFieldErrors(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	ctx := env.SignedInBrowser(t, auth.RoleOperator)
	at(t, ctx, env.URL+"/backfills/new?asset=raw.events&start=2026-11-01-00:00&end=2026-11-03-23:00", 1280)
	const marked = `(() => {
  const f = document.querySelector('[data-testid="backfill-form"] input[name="chunk_size"]');
  if (f.getAttribute("aria-invalid") !== "true") return "chunk size not aria-invalid";
  if (getComputedStyle(f).outlineStyle === "none") return "no outline";
  const m = document.getElementById(f.getAttribute("aria-describedby") || "-");
  if (!m || !/chunk size must be at least 1/.test(m.textContent)) return "not described by its message: " + (m && m.textContent);
  const fb = f.getBoundingClientRect(), mb = m.getBoundingClientRect();
  if (mb.top - fb.bottom > 40 || mb.left > fb.right + 200 || !m.closest("form")) return "message far from its field";
  return "";
})()`
	// typed: the form's input event starts the live preview
	typeChunk := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('input[name="chunk_size"]'); f.value = ` + strconv.Quote(v) + `; f.dispatchEvent(new Event("input", {bubbles: true})); return {}; })()`)
	}
	// fixChunk types a valid chunk size and waits for the preview again.
	fixChunk := func() {
		t.Helper()
		err := chromedp.Do(ctx,
			typeChunk("6"),
			chromedp.WaitVisible(css(`[data-testid="preview-partitions"]`)),
		)
		if err != nil {
			t.Fatal(err)
		}
	}
	err := chromedp.Do(ctx,
		typeChunk("0"),
		chromedp.WaitVisible(css(`#preview [data-testid="preview-error"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	evalUntil(t, ctx, "preview error", marked, 30*time.Second)
	testkit.Screenshot(t, ctx, "bf-field-error")
	fixChunk()
	evalUntil(t, ctx, "fixed", `document.querySelectorAll('[aria-invalid="true"], [data-field-msg]').length ? "still marked" : ""`, 30*time.Second)
	// A refused launch answers 400 with the form; wait for it at most 30 s.
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = chromedp.Do(lctx,
		chromedp.Evaluate[chromedp.Void](`(document.querySelector('input[name="chunk_size"]').value = "0", {})`),
		chromedp.Click(css(`[data-testid="launch"]`)),
		chromedp.WaitVisible(css(`[data-testid="error-chunk_size"]`)),
	)
	if err != nil {
		t.Fatalf("the refused launch shows no field error: %v", err)
	}
	evalUntil(t, ctx, "launch error", marked, 30*time.Second)
	// The refused launch left the address on the form (a reload keeps it).
	eval(t, ctx, "address after a refused launch", `location.pathname === "/backfills/new" ? "" : "address " + location.pathname`)
	// Fixing the value clears the message the refused launch rendered.
	fixChunk()
	evalUntil(t, ctx, "fixed after the launch", `Array.from(document.querySelectorAll('[aria-invalid="true"], [data-field-msg], [data-testid="error-chunk_size"]')).map(e => e.outerHTML.slice(0, 200)).join(" | ")`, 30*time.Second)
}

// TestBrowserPhoneAutomationPages (issue 22 audit): at 390 px the
// Automation page, the Sensors page, a poll sensor's page with its run
// keys, a push sensor's page, a schedule's page and the backfill a run now
// launched all fit the window (a wide table scrolls inside its own box;
// the run keys table used to stretch the page to 457 px), and at either
// width the backfill says "by schedule NAME" (it read "byschedule").
func TestBrowserPhoneAutomationPages(t *testing.T) {
	t.Parallel()
	script := testkit.Script(t, "eval.sh", `c=${TESSERA_SENSOR_CURSOR:-0}; n=$((c+1))
echo "{\"cursor\": \"$n\", \"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"landed-2026-11-25-files-batch-00$n\"}]}"
`)
	env := testkit.New(t, testkit.Options{WorkspaceYAML: fmt.Sprintf(`
assets:
  auto.regions:
    partitions: {static: [eu, us, ap]}
    executor: {demo: {duration: 1ms}}
schedules:
  auto.nightly:
    cron: "0 3 * * *"
    timezone: Europe/Berlin
    assets: [auto.regions]
sensors:
  crm.changed:
    assets: [auto.regions]
  files.landed:
    assets: [auto.regions]
    evaluator: {command: [%q]}
    interval: 24h
`, script)})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	sched, sensors := env.StartScheduler(t), env.StartSensors(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := sensors.Evaluate(ctx, "files.landed", false, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Handler.Engine.Push(ctx, "crm.changed", jobs.PushEvent{MessageID: "crm-4711", Partitions: []string{"eu", "us"}}, "alice"); err != nil {
		t.Fatal(err)
	}
	r, err := sched.Trigger(ctx, "auto.nightly", "alice")
	if err != nil || r.Backfill == nil {
		t.Fatalf("run now: %+v %v", r, err)
	}
	bctx := testkit.Browser(t)
	env.BrowserSignIn(t, bctx, auth.RoleAdmin)
	bf := "/backfills/" + r.Backfill.ID
	for _, w := range []int64{390, 1280} {
		for _, path := range []string{"/automation", "/sensors", "/sensors/files.landed", "/sensors/crm.changed", "/schedules/auto.nightly", bf} {
			at(t, bctx, env.URL+path, w)
			eval(t, bctx, fmt.Sprintf("%s at %d px", path, w), fitsScript)
		}
		testkit.Screenshot(t, bctx, fmt.Sprintf("automation-backfill-%d", w))
		eval(t, bctx, fmt.Sprintf("launched by, at %d px", w), `(() => {
  const t = document.querySelector('[data-testid="launched-by"]').innerText.replace(/\s+/g, " ");
  return t.includes("by schedule auto.nightly") ? "" : "launched-by reads " + JSON.stringify(t);
})()`)
	}
	at(t, bctx, env.URL+"/sensors/files.landed", 390)
	testkit.Screenshot(t, bctx, "phone-sensor-run-keys")
}

// TestBrowserPhoneRunNowNotice: at 390 px the notice Run now leaves on a
// schedule's page (it names the tick, an id as long as the schedule's name
// and more) breaks inside its box instead of widening the page.
func TestBrowserPhoneRunNowNotice(t *testing.T) {
	t.Parallel()
	s := startBinaryServer(t, `defaults:
  retries: {max_attempts: 1}
`+testkit.Assets(
		testkit.Asset("auto.regions", "{static: [eu, us, ap]}", "executor: {demo: {duration: 100ms}}"),
	)+`schedules:
  auto.regions_nightly_rebuild:
    cron: "0 3 * * *"
    assets: [auto.regions]
`)
	ctx := s.browser(t)
	at(t, ctx, s.URL+"/schedules/auto.regions_nightly_rebuild", 390)
	testkit.ClickAndLoad(t, ctx, `[data-testid="action-trigger"]`, 30*time.Second)
	testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="notice-link"]')`, 30*time.Second, "the run-now notice with its backfill")
	testkit.Screenshot(t, ctx, "phone-run-now-notice")
	eval(t, ctx, "the schedule page after Run now at 390 px", fitsScript)
}
