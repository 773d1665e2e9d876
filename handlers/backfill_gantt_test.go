package handlers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// The backfill page draws its chunks' attempts as a timeline: with a few,
// one bar each on the first slot (lane) free when it started, linking to
// its run; the most running at once is the number of lanes.
func TestBackfillGanttDrawsEachChunkOnItsSlot(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 1)
	empty := pgCreateBF(t, eng, "t.daily", "2025-02-01", "2025-02-02", 1)
	t0 := db.Millis(time.Now().Add(-time.Minute))
	s := func(d int64) int64 { return t0 + d*1000 }
	runs := []db.FixtureRun{
		{ID: "run_g0", Chunk: 0, State: db.RunSucceeded, At: s(0), End: s(10)},
		{ID: "run_g1", Chunk: 1, State: db.RunFailed, At: s(2), End: s(6)},
		{ID: "run_g2", Chunk: 2, State: db.RunSucceeded, At: s(7), End: s(12)}, // slot 2 is free again at 6
		{ID: "run_g3", Chunk: 3, State: db.RunRunning, At: s(11)},              // slot 1 is free at 10
	}
	for i := range runs {
		r := &runs[i]
		r.RunKey, r.Asset, r.Fingerprint, r.Partitions = fmt.Sprintf("backfill:%s:chunk:%d", b.ID, r.Chunk), "t.daily", "fp", 1
		if r.State != db.RunRunning {
			end := r.End
			r.FinishedAt = &end
		}
	}
	if err := env.Store.SeedRunsFixture(t.Context(), b.ID, env.Handler.Workspace().IDs["t.daily"], runs, db.FixtureProgress{NextChunk: 4, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, handlers.BackfillHref(b.ID))
	g := doc.Find(`[data-testid="gantt"]`)
	if g.Length() != 1 || doc.Find(`[data-testid="gantt-section"]`).AttrOr("data-mode", "") != "chunks" {
		t.Fatalf("no chunk timeline in chunks mode on the backfill page")
	}
	if g.AttrOr("data-attempts", "") != "4" || g.AttrOr("data-peak", "") != "2" {
		t.Errorf("timeline of %s attempts, peak %s; want 4 and 2", g.AttrOr("data-attempts", ""), g.AttrOr("data-peak", ""))
	}
	bars := doc.Find(`[data-testid="gantt-bar"]`)
	if bars.Length() != 4 {
		t.Fatalf("%d bars, want 4", bars.Length())
	}
	wantLane := []string{"1", "2", "2", "1"}
	wantClass := []string{"s-m", "s-f", "s-m", "s-r"}
	for i := range 4 {
		bar := bars.Eq(i)
		if bar.AttrOr("data-chunk", "") != fmt.Sprint(i) || bar.AttrOr("data-lane", "") != wantLane[i] || bar.AttrOr("class", "") != wantClass[i] {
			t.Errorf("bar %d: chunk %s lane %s class %s; want chunk %d lane %s class %s", i, bar.AttrOr("data-chunk", ""), bar.AttrOr("data-lane", ""),
				bar.AttrOr("class", ""), i, wantLane[i], wantClass[i])
		}
		if href := bar.Parent().AttrOr("href", ""); href != "/runs/"+runs[i].ID {
			t.Errorf("bar %d links to %q", i, href)
		}
	}
	if title := bars.Eq(1).Find("title").Text(); !strings.HasPrefix(title, "Chunk 1, attempt 1: failed, 4.0 s") {
		t.Errorf("bar 1 says %q", title)
	}
	if cap := doc.Find(`[data-testid="gantt-caption"]`).Text(); !strings.Contains(cap, "4 attempts") || !strings.Contains(cap, "at most 2 slots at once") {
		t.Errorf("caption %q", cap)
	}
	// The bars are as wide as the attempts: chunk 0 ran 10 of the
	// timeline's (at least) 60 s.
	if w := bars.Eq(0).AttrOr("width", ""); w == "" || w == "1000.0" {
		t.Errorf("chunk 0's bar is %q wide", w)
	}
	// The live page redraws it on updates; the partial is the same drawing.
	if doc.Find(`#bf-gantt[hx-get="`+handlers.BackfillHref(b.ID)+`/gantt"]`).Length() != 1 {
		t.Error("the running backfill's timeline does not redraw itself")
	}
	if href := doc.Find(`[data-testid="gantt-runs"]`).AttrOr("href", ""); href != "/runs?backfill="+b.ID {
		t.Errorf("the timeline links to the runs list at %q", href)
	}
	_, part := pgGet(t, env, c, handlers.BackfillHref(b.ID)+"/gantt")
	if part.Find(`[data-testid="gantt-bar"]`).Length() != 4 {
		t.Error("the partial does not draw the 4 attempts")
	}
	_, doc = pgGet(t, env, c, handlers.BackfillHref(empty.ID))
	if doc.Find(`[data-testid="gantt-empty"]`).Length() != 1 || doc.Find(`[data-testid="gantt"]`).Length() != 0 {
		t.Error("a backfill with no chunk started draws a timeline")
	}
}

// With more attempts than bars can show, the timeline is columns of the
// slots busy on average, whose size does not grow with the chunks; the
// page loads it after itself.
func TestBackfillGanttBucketsManyChunks(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-12-31", 1)
	t0 := db.Millis(time.Now().Add(-2 * time.Hour))
	const n = 3000
	var runs []db.FixtureRun
	for i := range int64(n) {
		at := t0 + i*2000 // 8 at once: each runs 16 s
		end := at + 16_000
		st := db.RunSucceeded
		if i%50 == 7 {
			st = db.RunFailed
		}
		runs = append(runs, db.FixtureRun{ID: fmt.Sprintf("run_m%04d", i), RunKey: fmt.Sprintf("backfill:%s:chunk:%d", b.ID, i), Asset: "t.daily",
			Fingerprint: "fp", Chunk: i, Partitions: 1, State: st, At: at, End: end, FinishedAt: &end})
	}
	if err := env.Store.SeedRunsFixture(t.Context(), b.ID, env.Handler.Workspace().IDs["t.daily"], runs, db.FixtureProgress{NextChunk: n, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	c := env.Client(t, auth.RoleViewer)
	// The page comes without it and loads it at once.
	_, doc := pgGet(t, env, c, handlers.BackfillHref(b.ID))
	if sec := doc.Find(`[data-testid="gantt-section"]`); sec.AttrOr("data-mode", "") != "lazy" || sec.AttrOr("hx-trigger", "") != "load" ||
		sec.AttrOr("hx-get", "") != handlers.BackfillHref(b.ID)+"/gantt" {
		t.Errorf("the page of %d chunks draws the timeline itself: %v", n, sec.Nodes)
	}
	_, doc = pgGet(t, env, c, handlers.BackfillHref(b.ID)+"/gantt")
	if mode := doc.Find(`[data-testid="gantt-section"]`).AttrOr("data-mode", ""); mode != "buckets" {
		t.Fatalf("mode %q with %d attempts, want buckets", mode, n)
	}
	g := doc.Find(`[data-testid="gantt"]`)
	if g.AttrOr("data-attempts", "") != fmt.Sprint(n) || g.AttrOr("data-peak", "") != "8" {
		t.Errorf("%s attempts, peak %s; want %d, 8", g.AttrOr("data-attempts", ""), g.AttrOr("data-peak", ""), n)
	}
	cols := doc.Find(`[data-testid="gantt-col"]`)
	if cols.Length() == 0 || cols.Length() > handlers.GanttColumns || doc.Find(`[data-testid="gantt-bar"]`).Length() != 0 {
		t.Errorf("%d columns and %d bars", cols.Length(), doc.Find(`[data-testid="gantt-bar"]`).Length())
	}
	if title := cols.Eq(cols.Length() / 2).Find("title").Text(); !strings.Contains(title, "slots busy on average") {
		t.Errorf("a column says %q", title)
	}
	if doc.Find(`[data-testid="gantt"] rect.s-f`).Length() == 0 {
		t.Error("no column shows the failed attempts")
	}
	if _, body := okText(t, env, c, handlers.BackfillHref(b.ID)+"/gantt"); len(body) > 60<<10 {
		t.Errorf("the timeline of %d attempts: %d bytes (at most 60 KB)", n, len(body))
	}
}
