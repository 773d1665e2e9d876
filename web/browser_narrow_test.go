package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// narrowFits returns "" when the page does not scroll sideways, else how
// wide it is and which elements stick out of the window: the outermost ones
// (where the overflow starts) and the innermost (the content too wide). An
// element inside a box that scrolls or clips sideways does not count: such a
// box may be wider inside, as long as the box itself fits.
const narrowFits = `(() => {
  const W = window.innerWidth, d = document.documentElement;
  const boxed = e => {
    for (let p = e.parentElement; p && p !== document.body && p !== d; p = p.parentElement) {
      if (["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(p).overflowX)) return true;
    }
    return false;
  };
  const out = e => e.getBoundingClientRect().right > W + 0.5 && !boxed(e);
  const bad = [...document.body.querySelectorAll("*")].filter(out);
  if (d.scrollWidth <= W && !bad.length) return "";
  const name = e => {
    let s = e.tagName.toLowerCase();
    if (e.id) s += "#" + e.id;
    if (typeof e.className === "string" && e.className.trim()) s += "." + e.className.trim().split(/\s+/).join(".");
    if (e.dataset && e.dataset.testid) s += '[data-testid="' + e.dataset.testid + '"]';
    const txt = (e.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40);
    const b = e.getBoundingClientRect();
    return s + " " + Math.round(b.left) + "–" + Math.round(b.right) + " px" + (txt ? " (" + JSON.stringify(txt) + ")" : "");
  };
  const outer = bad.filter(e => !out(e.parentElement)).slice(0, 5).map(name);
  const inner = bad.filter(e => ![...e.children].some(out)).slice(0, 5).map(name);
  return "page is " + d.scrollWidth + " px wide in a " + W + " px window; sticking out: " + outer.join(", ") +
    (inner.length ? "; widest content: " + inner.join(", ") : "");
})()`

// narrowScrollBoxes returns "" when the only boxes that scroll sideways are
// the ones made for it (a wide table's .scroll box, the partition grid, a
// log) and each of them is itself within the window, so that it can be seen
// and scrolled. The preview panel scrolled sideways, its table wider than it.
const narrowScrollBoxes = `(() => {
  const bad = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (!["auto", "scroll"].includes(getComputedStyle(e).overflowX) || e.scrollWidth <= e.clientWidth + 1) continue;
    const b = e.getBoundingClientRect(), what = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "");
    if (!e.matches(".scroll, .grid, pre")) bad.push(what + " scrolls sideways (" + e.scrollWidth + " px of content in " + e.clientWidth + " px)");
    else if (b.left < -0.5 || b.right > window.innerWidth + 0.5) bad.push(what + " is itself off-screen (" + Math.round(b.left) + "–" + Math.round(b.right) + " px)");
  }
  return bad.slice(0, 5).join("; ");
})()`

// narrowInCells returns "" when nothing sticks out of its table cell (the
// preview's per-asset strip did, into the next column or out of its box).
const narrowInCells = `(() => {
  const bad = [];
  for (const c of document.querySelectorAll("main td, main th")) {
    if (!c.getClientRects().length) continue;
    const cb = c.getBoundingClientRect();
    for (const e of c.querySelectorAll("*")) {
      const b = e.getBoundingClientRect();
      if (b.width === 0 || e.closest("td, th") !== c) continue;
      if (b.right > cb.right + 0.5 || b.left < cb.left - 0.5) {
        bad.push(e.tagName.toLowerCase() + (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "") +
          (e.dataset && e.dataset.testid ? '[data-testid="' + e.dataset.testid + '"]' : "") + " " + Math.round(b.left) + "–" + Math.round(b.right) +
          " px in a cell " + Math.round(cb.left) + "–" + Math.round(cb.right) + " px (column " + (c.cellIndex + 1) + " of " + (c.closest("table").dataset.testid || c.closest("table").className || "a table") + ")");
        break;
      }
    }
  }
  return bad.slice(0, 5).join("; ");
})()`

// narrowPreviewStrip returns "" when the preview's per-asset strip is drawn
// across (nearly) the width of the preview's table, not squeezed into its
// last column with a caption of one word a line.
const narrowPreviewStrip = `(() => {
  const s = document.querySelector('[data-testid="preview-grid"]'), t = document.querySelector('[data-testid="preview-assets"]');
  if (!s || !t) return "no preview strip";
  const sw = s.getBoundingClientRect().width, tw = t.getBoundingClientRect().width;
  return sw >= 0.8 * tw ? "" : "the strip is " + Math.round(sw) + " px wide in a " + Math.round(tw) + " px table";
})()`

// narrowOneLine returns "" when every count label (the backfill page's
// count-… items, the items of every .counts list) stands on one line: a
// label broken after "upstream-" reads as two counts.
const narrowOneLine = `(() => {
  const bad = [];
  for (const e of document.querySelectorAll('[data-testid^="count-"], .counts > *')) {
    if (!e.getClientRects().length) continue;
    const lh = parseFloat(getComputedStyle(e).lineHeight) || 1.45 * parseFloat(getComputedStyle(e).fontSize);
    const tops = new Set([...e.getClientRects()].map(r => Math.round(r.top)));
    const h = e.getBoundingClientRect().height;
    if (tops.size > 1 || h > 1.5 * lh) bad.push(JSON.stringify(e.textContent.trim().replace(/\s+/g, " ")) + " is " + Math.round(h) + " px high on " + tops.size + " lines (line " + Math.round(lh) + " px)");
  }
  return bad.slice(0, 5).join("; ");
})()`

// narrowChunkColumns returns "" when every cell of the chunk table's first
// row can be seen without scrolling: the state and the run link of a chunk
// are what a phone user looks for. Where the header is hidden (the phone's
// one block per chunk), each cell's label (CSS ::before) must be its
// column's header, so that a column added to the table cannot shift them.
const narrowChunkColumns = `(() => {
  const row = document.querySelector('[data-testid="chunk-row"]');
  if (!row) return "no chunk row";
  const bad = [...row.cells].filter(c => { const b = c.getBoundingClientRect(); return !c.offsetParent || b.width === 0 || b.left < 0 || b.right > window.innerWidth + 0.5; })
    .map(c => "column " + (c.cellIndex + 1) + " " + JSON.stringify(c.textContent.trim().replace(/\s+/g, " ").slice(0, 30)) + " at " + Math.round(c.getBoundingClientRect().left) + "–" + Math.round(c.getBoundingClientRect().right));
  const heads = [...row.closest("table").querySelectorAll("thead th")];
  if (heads.length !== row.cells.length) bad.push(heads.length + " headers for " + row.cells.length + " cells");
  if (heads.length && !heads[0].getClientRects().length) {
    heads.forEach((h, i) => {
      const label = getComputedStyle(row.cells[i], "::before").content.replace(/^"|"$/g, "");
      if (label.toLowerCase() !== h.textContent.trim().toLowerCase()) bad.push("column " + (i + 1) + " is labelled " + JSON.stringify(label) + ", its header is " + JSON.stringify(h.textContent.trim()));
    });
  }
  return bad.join(", ");
})()`

// narrowLoad opens path at width × 844 px and waits for sel (and the fonts).
func narrowLoad(t *testing.T, ctx context.Context, env *testkit.Env, path string, width int64, sel string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(width, 844),
		chromedp.Navigate(env.URL+path),
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](`document.fonts.ready.then(() => ({}))`, chromedp.EvalAwaitPromise),
	)
	if err != nil {
		t.Fatalf("load %s at %d px: %v", path, width, err)
	}
}

// TestBrowserNarrowViewport is the phone audit of every main page: at 390 ×
// 844 px no page scrolls sideways (a wide table may scroll inside its own
// box), count labels keep to one line, and the chunk table shows every
// column of a chunk, State and Run included, without sideways scrolling. The
// backfill is launched through the new-backfill form, as a user would. At
// 1280 px the same pages fit as well. Screenshots go to TESSERA_SCREENSHOTS.
func TestBrowserNarrowViewport(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	ctx := env.SignedInBrowser(t, auth.RoleAdmin)

	// The form with a preview (a range selection draws a strip per asset),
	// launched from the phone.
	const first = "2026-11-01-00:00"
	newPath := "/backfills/new?asset=raw.events&start=" + url.QueryEscape(first) + "&end=" + url.QueryEscape("2026-11-02-23:00") +
		"&chunk_size=4&max_concurrent_runs=2&title=" + url.QueryEscape("Phone audit: raw events of November 1 and 2")
	narrowLoad(t, ctx, env, newPath, 390, `[data-testid="preview-grid"]`)
	testkit.Screenshot(t, ctx, "narrow-390-new-backfill")
	eval(t, ctx, "new backfill with preview at 390 px", narrowFits)
	eval(t, ctx, "new backfill with preview at 390 px, counts", narrowOneLine)
	eval(t, ctx, "new backfill with preview at 390 px, scroll boxes", narrowScrollBoxes)
	eval(t, ctx, "new backfill with preview at 390 px, strip", narrowPreviewStrip)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="launch"]`))); err != nil {
		t.Fatalf("launch: %v", err)
	}
	var bfPath string
	testkit.Eventually(t, 30*time.Second, "the launch to open the backfill page", func() bool {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
		bfPath = p
		return err == nil && strings.HasPrefix(p, "/backfills/bf_")
	})
	id := strings.TrimPrefix(bfPath, "/backfills/")
	testkit.Eventually(t, 30*time.Second, "backfill "+id+" to succeed", func() bool {
		b, err := env.Store.Backfill(context.Background(), id)
		return err == nil && b.State == db.BackfillSucceeded
	})
	runs, err := env.Store.Runs(context.Background(), id, nil, -1, 1)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s: %d, %v", id, len(runs), err)
	}

	// A token of one's own, so that the tokens page has its table; the page
	// that shows the new secret once is checked here.
	narrowLoad(t, ctx, env, "/settings/tokens", 390, `[data-testid="create-token"]`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "phone-audit-pipeline")); err != nil {
		t.Fatalf("name a token: %v", err)
	}
	// A form: the page it leads to is measured once it has loaded, not
	// while the parts after the secret are still being parsed.
	testkit.ClickAndLoad(t, ctx, `[data-testid="create-token"]`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="new-token-secret"]`))); err != nil {
		t.Fatalf("create a token: %v", err)
	}
	testkit.Screenshot(t, ctx, "narrow-390-new-token")
	eval(t, ctx, "new token at 390 px", narrowFits)
	eval(t, ctx, "new token at 390 px, scroll boxes", narrowScrollBoxes)

	pages := []struct{ name, path, wait string }{
		{"overview", "/", `main table`},
		{"status", "/status", `main table`},
		{"asset", "/assets/raw.events", `[data-testid="grid"]`},
		{"asset-multi", "/assets/ml.features", `[data-testid="grid"]`},
		{"backfills", "/backfills", `main table`},
		{"new-backfill", newPath, `[data-testid="preview-grid"]`},
		{"backfill", bfPath, `[data-testid="chunk-row"]`},
		{"run", handlers.RunHref(runs[0].ID), `main h1`},
		{"partition", "/assets/raw.events/partitions/" + url.PathEscape(first), `main h1`},
		{"users", "/admin/users", `main table`},
		{"tokens", "/settings/tokens", `[data-testid="token-row"]`},
	}
	for _, w := range []int64{390, 1280} {
		for _, p := range pages {
			what := fmt.Sprintf("%s (%s) at %d px", p.name, p.path, w)
			narrowLoad(t, ctx, env, p.path, w, p.wait)
			testkit.Screenshot(t, ctx, fmt.Sprintf("narrow-%d-%s", w, p.name))
			eval(t, ctx, what, narrowFits)
			eval(t, ctx, what+", counts", narrowOneLine)
			eval(t, ctx, what+", table cells", narrowInCells)
			eval(t, ctx, what+", scroll boxes", narrowScrollBoxes)
			if p.name == "backfill" {
				eval(t, ctx, what+", chunk table", narrowChunkColumns)
			}
		}
	}
	// A small window, between the phone layout and the wide one: the
	// preview is the form's second column, as narrow as on a phone, and the
	// chunk table is a table again.
	narrowLoad(t, ctx, env, newPath, 820, `[data-testid="preview-grid"]`)
	eval(t, ctx, "new backfill at 820 px", narrowFits)
	eval(t, ctx, "new backfill at 820 px, scroll boxes", narrowScrollBoxes)
	eval(t, ctx, "new backfill at 820 px, strip", narrowPreviewStrip)
	narrowLoad(t, ctx, env, bfPath, 820, `[data-testid="chunk-row"]`)
	testkit.Screenshot(t, ctx, "narrow-820-backfill")
	eval(t, ctx, "backfill at 820 px", narrowFits)
	eval(t, ctx, "backfill at 820 px, counts", narrowOneLine)
	eval(t, ctx, "backfill at 820 px, chunk table", narrowChunkColumns)
}

// longErrorExec fails every attempt with one long error: a path of 300
// characters with no space or other break opportunity in it.
type longErrorExec struct{ msg string }

func (x longErrorExec) Execute(ctx context.Context, w jobs.Work) jobs.Result {
	return jobs.Result{Err: errors.New(x.msg)}
}

// narrowRunErrors returns "" when the run page's attempts and partitions
// tables do not scroll sideways (their .scroll box is as wide as its
// content) and every Error cell shows the whole message: its text holds
// want and every line of it lies inside the cell and inside the window.
// Where the header is hidden (one labelled block per row on a phone), each
// cell's label (CSS ::before) must be its column's header ("Attempt" for "#").
const narrowRunErrors = `((want) => {
  const bad = [], W = window.innerWidth;
  for (const id of ["attempts", "run-partition-table"]) {
    const t = document.querySelector('[data-testid="' + id + '"]');
    if (!t) { bad.push("no " + id + " table"); continue; }
    const box = t.parentElement;
    if (box.scrollWidth > box.clientWidth + 1) bad.push(id + "'s box scrolls sideways (" + box.scrollWidth + " px of content in " + box.clientWidth + " px)");
    const heads = [...t.querySelectorAll("thead th")].map(h => h.textContent.trim());
    const col = heads.indexOf("Error");
    if (col < 0) { bad.push(id + " has no Error column: " + heads.join(", ")); continue; }
    const rows = [...t.querySelectorAll("tbody tr")];
    if (!rows.length) bad.push(id + " has no rows");
    for (const row of rows) {
      const c = row.cells[col], cb = c.getBoundingClientRect();
      if (!c.textContent.includes(want)) { bad.push(id + " row " + (row.sectionRowIndex + 1) + ": the error cell lacks the message: " + JSON.stringify(c.textContent.slice(0, 60))); continue; }
      if (!c.getClientRects().length || cb.width === 0) { bad.push(id + " row " + (row.sectionRowIndex + 1) + ": the error cell is hidden"); continue; }
      if (c.scrollWidth > c.clientWidth + 1) bad.push(id + " row " + (row.sectionRowIndex + 1) + ": the error cell is " + c.scrollWidth + " px wide inside, " + c.clientWidth + " px outside");
      const r = document.createRange();
      r.selectNodeContents(c);
      const lines = [...r.getClientRects()].filter(x => x.width > 0);
      const out = lines.filter(x => x.left < Math.max(cb.left, 0) - 0.5 || x.right > Math.min(cb.right, W) + 0.5);
      if (out.length) bad.push(id + " row " + (row.sectionRowIndex + 1) + ": " + out.length + " of " + lines.length + " lines of the error are outside the cell (" +
        Math.round(cb.left) + "–" + Math.round(cb.right) + " px) or the window, e.g. " + Math.round(out[0].left) + "–" + Math.round(out[0].right) + " px");
      if (cb.left < -0.5 || cb.right > W + 0.5) bad.push(id + " row " + (row.sectionRowIndex + 1) + ": the error cell is at " + Math.round(cb.left) + "–" + Math.round(cb.right) + " px in a " + W + " px window");
    }
    if (rows.length && !t.tHead.getClientRects().length) {
      const alias = {"#": "attempt"};
      heads.forEach((h, i) => {
        const label = getComputedStyle(rows[0].cells[i], "::before").content.replace(/^"|"$/g, "").toLowerCase();
        const wantLabel = alias[h] || h.toLowerCase();
        if (label !== wantLabel) bad.push(id + " column " + (i + 1) + " is labelled " + JSON.stringify(label) + ", its header is " + JSON.stringify(h));
      });
    }
  }
  return bad.slice(0, 6).join("; ");
})`

// TestBrowserNarrowRunLongError: a failed run whose error is a long path
// with no break in it (300 characters, as a missing file's absolute path
// is) shows the whole message on the run page at 390 px without sideways
// scrolling: not of the page, nor of the attempts or partitions table's
// box (before, the Error column made the attempts box scroll sideways and
// the message could only be read by scrolling it). The same at 820 and
// 1280 px.
func TestBrowserNarrowRunLongError(t *testing.T) {
	t.Parallel()
	path := "/mnt/warehouse/landing/"
	for i := 0; len(path) < 290; i++ {
		path += fmt.Sprintf("segment_%02d/", i)
	}
	path += "events.parquet"
	path = path[len(path)-300:]
	if len(path) != 300 || strings.ContainsAny(path, " \t\n") {
		t.Fatalf("the message is %d characters: %q", len(path), path)
	}
	env := testkit.WithAssets(t,
		testkit.Asset("r.daily", "{daily: {start: 2025-01-01}}", "retries: {max_attempts: 2, backoff: 1ms}"),
	)
	eng := env.StartEngine(t, jobs.Options{Executor: longErrorExec{msg: path}})
	bf := testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{"r.daily"}, ChunkSize: 2, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}})
	testkit.Eventually(t, 30*time.Second, "backfill "+bf.ID+" to fail", func() bool {
		b, err := env.Store.Backfill(context.Background(), bf.ID)
		return err == nil && b.State == db.BackfillFailed
	})
	runs, err := env.Store.Runs(context.Background(), bf.ID, nil, -1, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of %s: %d, %v", bf.ID, len(runs), err)
	}
	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	check := narrowRunErrors + "(" + strconv.Quote(path) + ")"
	for _, w := range []int64{390, 820, 1280} {
		what := fmt.Sprintf("run page with a %d-character error at %d px", len(path), w)
		narrowLoad(t, ctx, env, handlers.RunHref(runs[0].ID), w, `[data-testid="attempt"]`)
		testkit.Screenshot(t, ctx, fmt.Sprintf("narrow-%d-run-long-error", w))
		eval(t, ctx, what, narrowFits)
		eval(t, ctx, what+", scroll boxes", narrowScrollBoxes)
		eval(t, ctx, what+", table cells", narrowInCells)
		eval(t, ctx, what+", error cells", check)
	}
}
