package handlers_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

var outcomeWorkspace = `defaults:
  retries: {max_attempts: 1}
` + testkit.Assets(
	testkit.Asset("o.ok", testkit.Daily, "executor: {demo: {duration: 5ms}}"),
	testkit.Asset("o.flaky", testkit.Daily, "executor: {demo: {duration: 5ms, failure_rate: 1}}"),
	testkit.Asset("o.down", testkit.Daily, "deps: [{asset: o.flaky}]", "executor: {demo: {duration: 5ms}}"),
	testkit.Asset("o.hourly", `{hourly: {start: "2025-01-01-00:00"}}`, "executor: {demo: {duration: 5ms}}"),
	testkit.Asset("o.static", "{static: [acme, globex, initech]}", "executor: {demo: {duration: 5ms}}"),
)

func ogCreate(t *testing.T, eng *jobs.Engine, assets []string, sel jobs.Selector, chunk int64) db.Backfill {
	t.Helper()
	return testkit.CreateBackfill(t, eng, jobs.Request{Assets: assets, ChunkSize: chunk, MaxConcurrentRuns: 4, Selector: sel, Title: "outcomes"})
}

// ogGrid returns the outcome grid of one asset on a backfill page.
func ogGrid(t *testing.T, doc *goquery.Document, asset string) *goquery.Selection {
	t.Helper()
	g := doc.Find(`[data-testid="outcome-grid"][data-asset="` + asset + `"]`)
	if g.Length() != 1 {
		t.Fatalf("%d outcome grids of %s", g.Length(), asset)
	}
	return g
}

// ogRuns maps chunk numbers to run ids.
func ogRuns(t *testing.T, env *testkit.Env, id string) map[int64]string {
	t.Helper()
	runs, err := env.Store.ChunkRuns(t.Context(), id, 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, r := range runs {
		out[r.Chunk] = r.ID
	}
	return out
}

// ogCheckTiles checks that a grid draws exactly keys (in page order), each
// with outcome state and class cls, linking to the run of its chunk
// (chunk[key]) or, when runs is nil, to its partition page.
func ogCheckTiles(t *testing.T, g *goquery.Selection, asset string, keys []string, state, cls string, chunk map[string]int64, runs map[int64]string) {
	t.Helper()
	tiles := g.Find(`[data-testid="outcome-tile"]`)
	if tiles.Length() != len(keys) {
		t.Fatalf("%s: %d partition tiles, want %d", asset, tiles.Length(), len(keys))
	}
	tiles.Each(func(i int, s *goquery.Selection) {
		key := keys[i]
		if got := s.AttrOr("data-state", ""); got != state {
			t.Errorf("%s %s: outcome %q, want %q", asset, key, got, state)
		}
		if !s.HasClass(cls) {
			t.Errorf("%s %s: class %q lacks %s", asset, key, s.AttrOr("class", ""), cls)
		}
		title := s.AttrOr("title", "")
		ch := chunk[key]
		wantHref, wantTitle := handlers.PartitionHref(asset, key), fmt.Sprintf("%s · %s · chunk %d · not planned yet", key, strings.ReplaceAll(state, "_", " "), ch)
		if runs != nil {
			wantHref, wantTitle = handlers.RunHref(runs[ch]), fmt.Sprintf("%s · %s · chunk %d · run %s", key, strings.ReplaceAll(state, "_", " "), ch, runs[ch])
		}
		if got := s.AttrOr("href", ""); got != wantHref {
			t.Errorf("%s %s: links to %q, want %q", asset, key, got, wantHref)
		}
		if title != wantTitle {
			t.Errorf("%s %s: tooltip %q, want %q", asset, key, title, wantTitle)
		}
	})
}

// TestBackfillOutcomeGridPerPartition runs a succeeding backfill and a failing
// one (an upstream that always fails and its downstream): the backfill page
// draws one tile per selected partition, laid out as a calendar, coloured by
// this backfill's outcome and linking to the run of the partition's chunk.
func TestBackfillOutcomeGridPerPartition(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, outcomeWorkspace, true)
	ok := ogCreate(t, eng, []string{"o.ok"}, jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-05"}, 2)
	bad := ogCreate(t, eng, []string{"o.flaky", "o.down"}, jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-03"}, 2)
	pgWaitState(t, env, ok.ID, db.BackfillSucceeded)
	pgWaitState(t, env, bad.ID, db.BackfillFailed)
	c := env.Client(t, auth.RoleViewer)

	_, doc := pgGet(t, env, c, "/backfills/"+ok.ID)
	g := ogGrid(t, doc, "o.ok")
	if g.AttrOr("data-mode", "") != "partitions" || g.Find(`[data-testid="outcome-partitions"]`).AttrOr("data-mode", "") != "calendar" {
		t.Errorf("o.ok outcome grid: mode %q, layout %q; want partitions on a calendar", g.AttrOr("data-mode", ""), g.Find(`[data-testid="outcome-partitions"]`).AttrOr("data-mode", ""))
	}
	keys := []string{"2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04", "2025-01-05"}
	chunk := map[string]int64{"2025-01-01": 0, "2025-01-02": 0, "2025-01-03": 1, "2025-01-04": 1, "2025-01-05": 2}
	ogCheckTiles(t, g, "o.ok", keys, "materialized", "s-m", chunk, ogRuns(t, env, ok.ID))
	if n := g.Find(`[data-testid="outcome-legend"] li`).Length(); n != 7 {
		t.Errorf("outcome legend has %d entries, want 7", n)
	}
	if g.Find(`[data-testid="outcome-chunk"], [data-testid="outcome-strip"]`).Length() != 0 {
		t.Error("a small selection is drawn by chunk as well")
	}

	_, doc = pgGet(t, env, c, "/backfills/"+bad.ID)
	runs := ogRuns(t, env, bad.ID)
	keys = keys[:3]
	// o.flaky holds chunks 0-1, o.down chunks 2-3.
	ogCheckTiles(t, ogGrid(t, doc, "o.flaky"), "o.flaky", keys, "failed", "s-f", map[string]int64{"2025-01-01": 0, "2025-01-02": 0, "2025-01-03": 1}, runs)
	ogCheckTiles(t, ogGrid(t, doc, "o.down"), "o.down", keys, "upstream_failed", "s-u", map[string]int64{"2025-01-01": 2, "2025-01-02": 2, "2025-01-03": 3}, runs)

	// The grid partial draws the same tiles.
	_, doc = pgGet(t, env, c, "/backfills/"+bad.ID+"/grid")
	if n := doc.Find(`[data-testid="outcome-tile"][data-state="failed"]`).Length(); n != 3 {
		t.Errorf("grid partial: %d failed tiles, want 3", n)
	}
}

// TestBackfillOutcomeGridLayouts checks, without running anything: pending
// tiles link to the partition page; an explicit list is drawn in index order
// with gaps; a static asset is a list; a canceled backfill's unplanned
// partitions are canceled; a selection above the tile limit is drawn by
// chunk (one tile per chunk when at most 1,000, else the bucket strip).
func TestBackfillOutcomeGridLayouts(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, outcomeWorkspace, false)
	c := env.Client(t, auth.RoleViewer)

	ex := ogCreate(t, eng, []string{"o.ok"}, jobs.Selector{Type: "explicit", Keys: []string{"2025-01-09", "2025-01-02", "2025-01-05"}}, 2)
	_, doc := pgGet(t, env, c, "/backfills/"+ex.ID)
	g := ogGrid(t, doc, "o.ok")
	// Positions 0,1 (01-09, 01-02) are chunk 0, position 2 (01-05) chunk 1.
	ogCheckTiles(t, g, "o.ok", []string{"2025-01-02", "2025-01-05", "2025-01-09"}, "pending", "s-x",
		map[string]int64{"2025-01-09": 0, "2025-01-02": 0, "2025-01-05": 1}, nil)
	var cols []string
	g.Find(`[data-testid="outcome-tile"]`).Each(func(_ int, s *goquery.Selection) {
		cls := strings.Fields(s.AttrOr("class", ""))
		cols = append(cols, cls[len(cls)-1])
	})
	if strings.Join(cols, " ") != "c2 c5 c9" {
		t.Errorf("explicit tiles placed at %v, want their own days (c2 c5 c9)", cols)
	}

	st := ogCreate(t, eng, []string{"o.static"}, jobs.Selector{Type: "range"}, 1)
	_, doc = pgGet(t, env, c, "/backfills/"+st.ID)
	g = ogGrid(t, doc, "o.static")
	if g.Find(`[data-testid="outcome-partitions"]`).AttrOr("data-mode", "") != "list" {
		t.Error("a static asset's outcome grid is not a list")
	}
	ogCheckTiles(t, g, "o.static", []string{"acme", "globex", "initech"}, "pending", "s-x", map[string]int64{"acme": 0, "globex": 1, "initech": 2}, nil)
	if _, err := eng.Transition(t.Context(), st.ID, jobs.ActCancel, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	_, doc = pgGet(t, env, c, "/backfills/"+st.ID)
	if n := doc.Find(`[data-testid="outcome-tile"][data-state="canceled"].s-o`).Length(); n != 3 {
		t.Errorf("canceled backfill: %d canceled tiles, want 3", n)
	}

	// 1,417 hours: above the tile limit.
	sel := jobs.Selector{Type: "range", Start: "2025-01-01-00:00", End: "2025-03-01-00:00"}
	byChunk := ogCreate(t, eng, []string{"o.hourly"}, sel, 2)
	g = ogGrid(t, okPage(t, env, c, "/backfills/"+byChunk.ID), "o.hourly")
	if g.AttrOr("data-mode", "") != "chunks" || g.Find(`[data-testid="outcome-tile"]`).Length() != 0 {
		t.Error("a selection above the tile limit is drawn by partition")
	}
	if n := g.Find(`[data-testid="outcome-chunk"][data-state="pending"]`).Length(); int64(n) != byChunk.TotalChunks || n != 709 {
		t.Errorf("%d chunk tiles, want 709", n)
	}
	// Canceled before they were planned: chunk tiles say so, not pending.
	if _, err := eng.Transition(t.Context(), byChunk.ID, jobs.ActCancel, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	_, doc = pgGet(t, env, c, "/backfills/"+byChunk.ID)
	g = ogGrid(t, doc, "o.hourly")
	if n := g.Find(`[data-testid="outcome-chunk"][data-state="canceled"]`).Length(); n != 709 || g.Find(`[data-testid="outcome-chunk"][data-state="pending"]`).Length() != 0 {
		t.Errorf("canceled backfill: %d canceled chunk tiles, want 709 and none pending", n)
	}
	if eta := doc.Find(`[data-testid="eta"]`).Text(); eta != "canceled" {
		t.Errorf("ETA of a canceled backfill %q, want canceled", eta)
	}
	strip := ogCreate(t, eng, []string{"o.hourly"}, sel, 1)
	_, doc = pgGet(t, env, c, "/backfills/"+strip.ID)
	g = ogGrid(t, doc, "o.hourly")
	if g.Find(`[data-testid="outcome-strip"]`).Length() != 1 || g.Find(`[data-testid="outcome-tile"], [data-testid="outcome-chunk"]`).Length() != 0 {
		t.Error("1,417 chunks are not drawn as the bucket strip")
	}
	if got := g.Find(`[data-testid="outcome-grid-caption"]`).Text(); got != "1,417 partitions in 1,417 chunks" {
		t.Errorf("caption %q", got)
	}
}
