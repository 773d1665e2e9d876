package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// PagesResult is the result line of `tessera bench pages`.
type PagesResult struct {
	Bench       string  `json:"bench"`
	Partitions  int64   `json:"partitions"`
	Chunks      int64   `json:"chunks"`
	Requests    int     `json:"requests"`
	PageP50ms   float64 `json:"backfill_page_p50_ms"`
	PageP95ms   float64 `json:"backfill_page_p95_ms"`
	PageBytes   int     `json:"backfill_page_bytes"`
	GridP50ms   float64 `json:"grid_partial_p50_ms"`
	GridP95ms   float64 `json:"grid_partial_p95_ms"`
	GridBytes   int     `json:"grid_partial_bytes"`
	ChunksP50ms float64 `json:"chunk_table_p50_ms"`
	ChunksP95ms float64 `json:"chunk_table_p95_ms"`
	ChunksBytes int     `json:"chunk_table_bytes"`
	// The live fragments the page refreshes on every update.
	SummaryP50ms float64 `json:"summary_partial_p50_ms"`
	SummaryP95ms float64 `json:"summary_partial_p95_ms"`
	SummaryBytes int     `json:"summary_partial_bytes"`
	EventsP50ms  float64 `json:"events_partial_p50_ms"`
	EventsP95ms  float64 `json:"events_partial_p95_ms"`
	EventsBytes  int     `json:"events_partial_bytes"`
	// The backfill page's chunk timeline (drawn in the page, redrawn by
	// this partial) and the runs list of every backfill, unfiltered and
	// filtered on a state and an asset (issue 24).
	GanttP50ms      float64 `json:"gantt_partial_p50_ms"`
	GanttP95ms      float64 `json:"gantt_partial_p95_ms"`
	GanttBytes      int     `json:"gantt_partial_bytes"`
	RunsP50ms       float64 `json:"runs_page_p50_ms"`
	RunsP95ms       float64 `json:"runs_page_p95_ms"`
	RunsBytes       int     `json:"runs_page_bytes"`
	RunsFailedP50ms float64 `json:"runs_failed_page_p50_ms"`
	RunsFailedP95ms float64 `json:"runs_failed_page_p95_ms"`
	RunsFailedBytes int     `json:"runs_failed_page_bytes"`
	LoadS           float64 `json:"load_s"`
	TargetP50ms     float64 `json:"target_p50_ms"`
	TargetMaxBytes  int     `json:"target_max_bytes"`
}

// Pages creates the backfill through the engine (the same Create the
// API uses), then records its runs as half done: succeeded chunks with their
// attempts, some failed, a few running, the rest not planned yet.
func Pages(ctx context.Context, n, chunks int64, requests int) (PagesResult, error) {
	store, loaded, now, cleanup, err := hourlyAsset(ctx, int(n))
	if err != nil {
		return PagesResult{}, err
	}
	defer cleanup()
	ws := loaded.Workspace
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	wsf := func() (*catalog.Workspace, map[string]int64) { return loaded.Workspace, loaded.IDs }
	eng, err := jobs.NewEngine(ctx, store, wsf, log, jobs.Options{Executor: jobs.NoopExecutor{}})
	if err != nil {
		return PagesResult{}, err
	}
	a := ws.Assets[0]
	sp := a.Scheme.Space(now, nil)
	if sp.Len() != n {
		return PagesResult{}, fmt.Errorf("bench asset has %d partitions, want %d", sp.Len(), n)
	}
	size := (n + chunks - 1) / chunks
	t0 := time.Now()
	cr, err := eng.Create(ctx, jobs.Request{Assets: []string{a.Key}, ChunkSize: size, MaxConcurrentRuns: 64, Title: "bench pages",
		Selector: jobs.Selector{Type: "range", Start: sp.Key(0), End: sp.Key(n - 1)}}, "", "bench")
	if err != nil {
		return PagesResult{}, err
	}
	b := cr.Backfill
	if err := seedRuns(ctx, store, eng, b, a.Key, loaded.IDs[a.Key], sp, size, now); err != nil {
		return PagesResult{}, err
	}
	load := time.Since(t0)

	srv := startPageServer(store, loaded, nil)
	defer srv.Close()
	res := PagesResult{Bench: "pages", Partitions: n, Chunks: b.TotalChunks, Requests: requests, LoadS: round(load.Seconds()),
		TargetP50ms: 100, TargetMaxBytes: 300 << 10}
	base := srv.URL + handlers.BackfillHref(b.ID)
	if res.PageP50ms, res.PageP95ms, res.PageBytes, err = timeGets(base, requests); err != nil {
		return res, err
	}
	if res.GridP50ms, res.GridP95ms, res.GridBytes, err = timeGets(base+"/grid", requests); err != nil {
		return res, err
	}
	if res.ChunksP50ms, res.ChunksP95ms, res.ChunksBytes, err = timeGets(fmt.Sprintf("%s/chunks?after=%d", base, b.TotalChunks/4), requests); err != nil {
		return res, err
	}
	if res.SummaryP50ms, res.SummaryP95ms, res.SummaryBytes, err = timeGets(base+"/summary", requests); err != nil {
		return res, err
	}
	if res.EventsP50ms, res.EventsP95ms, res.EventsBytes, err = timeGets(base+"/events", requests); err != nil {
		return res, err
	}
	if res.GanttP50ms, res.GanttP95ms, res.GanttBytes, err = timeGets(base+"/gantt", requests); err != nil {
		return res, err
	}
	if res.RunsP50ms, res.RunsP95ms, res.RunsBytes, err = timeGets(srv.URL+"/runs", requests); err != nil {
		return res, err
	}
	if res.RunsFailedP50ms, res.RunsFailedP95ms, res.RunsFailedBytes, err = timeGets(srv.URL+"/runs?state=failed&asset="+a.Key, requests); err != nil {
		return res, err
	}
	return res, nil
}

// seedRuns writes the runs and attempts of the first half of the
// chunks (2% failed, the last 64 running) and the backfill's counters.
func seedRuns(ctx context.Context, store *db.Store, eng *jobs.Engine, b db.Backfill, asset string, assetID int64, sp catalog.Space, size int64, now time.Time) error {
	rng := rand.New(rand.NewPCG(3, 4))
	half := b.TotalChunks / 2
	started := db.Millis(now.Add(-2 * time.Hour))
	var mat, failed, succ, fail, running int64
	var runs []db.FixtureRun
	span := db.Millis(now) - started
	for ch := int64(0); ch < half; ch++ {
		lo := ch * size
		hi := min(lo+size-1, b.TotalPartitions-1)
		parts := hi - lo + 1
		key := jobs.RunKey(b.ID, ch)
		id := eng.RunID(b.ID, ch)
		st, at := db.RunSucceeded, started+span*ch/half
		end := at + 500 + rng.Int64N(1000)
		var errMsg *string
		var m, f int64 = parts, 0
		switch {
		case ch >= half-64:
			st, m = db.RunRunning, 0
			running++
		case rng.Float64() < 0.02:
			st, m, f = db.RunFailed, 0, parts
			e := "bench: simulated failure"
			errMsg = &e
			fail++
		default:
			succ++
		}
		var fin *int64
		if st != db.RunRunning {
			fin = &end
		}
		runs = append(runs, db.FixtureRun{ID: id, RunKey: key, Asset: asset, Fingerprint: fmt.Sprintf("fp%d", ch), FirstKey: sp.Key(lo), LastKey: sp.Key(hi),
			Chunk: ch, Partitions: parts, Materialized: m, Failed: f, State: st, Error: errMsg, At: at, End: end, FinishedAt: fin})
		mat += m
		failed += f
	}
	return store.SeedRunsFixture(ctx, b.ID, assetID, runs, db.FixtureProgress{NextChunk: half, Running: running, Succeeded: succ, Failed: fail,
		PartitionsMaterialized: mat, PartitionsFailed: failed, StartedAt: started})
}
