package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserNarrowAutomationHistory: at 390 × 844 px neither a poll
// sensor's page, with evaluations whose error, cursors, run keys and log
// are single long words, nor a schedule's page, with ticks whose reason is
// one, scrolls sideways: the long words wrap inside their cells (the
// evaluations table made the whole page 1,000 px wide).
func TestBrowserNarrowAutomationHistory(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: testkit.Assets(testkit.Asset("n.regions", "{static: [eu, us]}", "code_version: v1")) + `schedules:
  nightly.regions:
    cron: "0 3 * * *"
    assets: [n.regions]
sensors:
  files.landed:
    assets: [n.regions]
    evaluator: {command: ["true"]}
    interval: 24h
`})
	ctx := t.Context()
	long := func(prefix string, n int) string { return prefix + strings.Repeat("x", n) }
	path := "/data/landing/" + strings.Repeat("incoming-batch-2026-11-29/", 12) + "manifest.json" + strings.Repeat("Z", 300)
	cursorBefore, cursorAfter := long("eyJvZmZzZXQiOjEyMzQ1Njc4OTB9", 160), long("eyJvZmZzZXQiOjEyMzQ1Njc4OTF9", 160)
	t0 := time.Now().Add(-time.Hour)
	if _, err := env.Store.EnsureSensorState(ctx, "files.landed", db.Millis(t0)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ev := db.SensorEvaluation{Sensor: "files.landed", Kind: db.EvalDryRun, StartedAt: db.Millis(t0.Add(time.Duration(i) * time.Minute)), DurationMs: 1234,
			CursorBefore: &cursorBefore, CursorAfter: &cursorAfter, Actor: "operator-with-a-long-name@example.com",
			Requests: fmt.Sprintf(`[{"partitions":["eu","us"],"run_key":%q,"preview":{"total_partitions":2,"total_chunks":1}}]`, long("run-key-", 120))}
		if i%2 == 0 {
			msg := "evaluator exited 1: open " + path + ": no such file or directory"
			tail := strings.Repeat("traceback:"+path, 3)
			ev.Error, ev.LogTail, ev.Requests = &msg, &tail, "[]"
		}
		record := env.Store.RecordDryRun
		if ev.Error != nil {
			ev.Kind = db.EvalEvaluation
			record = func(ctx context.Context, ev db.SensorEvaluation) (int64, error) {
				return env.Store.FailEvaluation(ctx, db.Millis(time.Now().Add(time.Hour)), ev)
			}
		}
		if _, err := record(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Store.ResetSensorCursor(ctx, "files.landed", &cursorAfter, "operator-with-a-long-name@example.com", db.Millis(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.EnsureScheduleState(ctx, "nightly.regions", db.Millis(t0)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		reason := "it would fail: asset n.regions: " + path + " is not readable"
		if _, err := env.Store.RecordTick(ctx, db.Tick{ID: fmt.Sprintf("nightly.regions:%d", at.Unix()), Schedule: "nightly.regions", ScheduledFor: db.Millis(at),
			EvaluatedAt: db.Millis(at), Outcome: db.TickFailed, Reason: &reason, DefinitionHash: "h", Actor: "operator-with-a-long-name@example.com"}); err != nil {
			t.Fatal(err)
		}
	}

	b := env.SignedInBrowser(t, auth.RoleAdmin)
	for _, p := range []struct{ path, sel, table string }{
		{"/sensors/files.landed", `[data-testid="evaluation-row"]`, `[data-testid="evaluations-table"]`},
		{"/schedules/nightly.regions", `[data-testid="tick-row"]`, `[data-testid="ticks-table"]`},
	} {
		narrowLoad(t, b, env, p.path, 390, p.sel)
		testkit.Screenshot(t, b, "narrow-390"+strings.ReplaceAll(p.path, "/", "-"))
		if got := testkit.JS(t, b, `document.documentElement.scrollWidth + " " + document.documentElement.clientWidth`); func() bool {
			var sw, cw int
			_, err := fmt.Sscan(got, &sw, &cw)
			return err != nil || sw > cw
		}() {
			t.Errorf("%s at 390 px: scrollWidth clientWidth = %s, want the page no wider than the window", p.path, got)
		}
		eval(t, b, p.path+" at 390 px", narrowFits)
		eval(t, b, p.path+" at 390 px, cells", narrowInCells)
		eval(t, b, p.path+" at 390 px, rows", fmt.Sprintf(narrowRowsInView, p.table))
	}
}

// narrowRowsInView returns "" when the table %[1]q does not scroll
// sideways in its box and every cell of every row is within the window (a
// row's error, request or backfill link was a sideways scroll away), and,
// where the header is hidden (one block per row), each cell shown but the
// first is labelled with its column's header.
const narrowRowsInView = `(() => {
  const t = document.querySelector(%[1]q);
  if (!t) return "no table " + %[1]q;
  const bad = [], box = t.closest(".scroll");
  if (box && box.scrollWidth > box.clientWidth + 1) bad.push("the table scrolls sideways in its box (" + box.scrollWidth + " px of content in " + box.clientWidth + " px)");
  const heads = [...t.querySelectorAll("thead th")].map(h => h.textContent.trim().toLowerCase());
  const stacked = heads.length && !t.querySelector("thead th").getClientRects().length;
  for (const row of t.tBodies[0].rows) {
    for (const c of row.cells) {
      if (!c.getClientRects().length) continue;
      const b = c.getBoundingClientRect();
      if (b.left < -0.5 || b.right > window.innerWidth + 0.5) bad.push("column " + (c.cellIndex + 1) + " at " + Math.round(b.left) + "–" + Math.round(b.right) + " px");
      const label = getComputedStyle(c, "::before").content.replace(/^"|"$/g, "").toLowerCase();
      if (stacked && c.cellIndex > 0 && label !== heads[c.cellIndex]) bad.push("column " + (c.cellIndex + 1) + " is labelled " + JSON.stringify(label) + ", its header is " + JSON.stringify(heads[c.cellIndex]));
    }
  }
  return [...new Set(bad)].slice(0, 5).join("; ");
})()`
