package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// BenchBackfill is the backfill a benchmark ran (bench backfill, bench
// mixed): the first fields of its result line.
type BenchBackfill struct {
	Bench       string `json:"bench"`
	Partitions  int64  `json:"partitions"`
	Chunks      int64  `json:"chunks"`
	ChunkSize   int64  `json:"chunk_size"`
	Concurrency int    `json:"concurrency"`
	Executor    string `json:"executor"`
}

// BackfillResult is the result line of `tessera bench backfill`.
type BackfillResult struct {
	BenchBackfill
	// Instances is how many engines shared the backfill, each with its own
	// store (connections) and Concurrency slots, on one database.
	Instances         int     `json:"instances"`
	State             string  `json:"state"`
	WallS             float64 `json:"wall_s"`
	RunsPerS          float64 `json:"runs_per_s"`
	PartitionsPerS    float64 `json:"partitions_per_s"`
	RawPartitionsPerS float64 `json:"raw_partitions_per_s"`
	RatioToRaw        float64 `json:"ratio_to_raw"`
	CreateMs          float64 `json:"create_ms"`
	PreviewMs         float64 `json:"preview_ms"`
	CompletionLagMs   float64 `json:"completion_lag_ms"`
	PeakRSSMB         float64 `json:"peak_rss_mb"`
	// StepsPerChunk is the controller steps (each one write transaction
	// of an engine) per chunk run, over every instance: what the engine's
	// group commit made of the backfill.
	StepsPerChunk float64 `json:"steps_per_chunk"`
}

// stepsOf is the controller steps engs have taken so far: those of the
// backfill are counted from its creation, not the idle ticks before.
func stepsOf(engs []*jobs.Engine) (n int64) {
	for _, e := range engs {
		n += e.Steps()
	}
	return n
}

// lastReturn is a noop executor that remembers when the last run returned;
// with Sleep set, each run first sleeps that long (a chunk's work).
type lastReturn struct {
	at    atomic.Int64
	Sleep time.Duration
}

func (l *lastReturn) Execute(ctx context.Context, w jobs.Work) jobs.Result {
	if l.Sleep > 0 {
		t := time.NewTimer(l.Sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return jobs.Result{Err: context.Cause(ctx)}
		}
	}
	l.at.Store(time.Now().UnixNano())
	return jobs.Result{}
}

// BackfillOptions are the settings of Backfill.
type BackfillOptions struct {
	Partitions, ChunkSize int64
	// Concurrency is each instance's slots; the backfill's cap is
	// Concurrency × Instances (at most jobs.MaxConcurrentRunsCap).
	Concurrency int
	// DB is the database: "" for a temporary SQLite file, or a PostgreSQL
	// URL of a database holding no workspace (the benchmark writes its
	// asset and backfill there).
	DB string
	// Instances engines share the backfill (1 when 0); more than one
	// needs PostgreSQL.
	Instances int
	// Sleep, when set, is how long the executor works on each chunk
	// (executor sleep:DURATION); 0 returns at once (noop).
	Sleep time.Duration
}

// ExecutorName is how the result line names o's executor.
func (o BackfillOptions) ExecutorName() string {
	if o.Sleep > 0 {
		return "sleep:" + o.Sleep.String()
	}
	return "noop"
}

// Backfill runs a whole backfill of one hourly asset of o.Partitions
// partitions, in chunks of o.ChunkSize, through the real controller and
// store (o.Instances engines on one database, each o.Concurrency runs at a
// time) with a noop (or sleeping) executor, and measures the raw SQLite
// ceiling of the same rows beside it. A non-nil prof receives a CPU profile
// of the backfill (not of the raw ceiling).
func Backfill(ctx context.Context, o BackfillOptions, prof *os.File) (BackfillResult, error) {
	n, chunk, conc := o.Partitions, o.ChunkSize, o.Concurrency
	if o.Instances <= 0 {
		o.Instances = 1
	}
	out := BackfillResult{BenchBackfill: BenchBackfill{Bench: "backfill", Partitions: n, ChunkSize: chunk, Concurrency: conc, Executor: o.ExecutorName()},
		Instances: o.Instances}
	dir, err := os.MkdirTemp("", "tessera-bench-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	raw, err := db.RawCeiling(ctx, filepath.Join(dir, "raw.db"), n)
	if err != nil {
		return out, err
	}
	out.RawPartitionsPerS = round(raw)
	loc := o.DB
	if loc == "" {
		loc = filepath.Join(dir, "bench.db")
	}
	stores, err := openInstances(ctx, loc, o.Instances)
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	if err != nil {
		return out, err
	}
	store := stores[0]
	now := time.Now().UTC()
	ws, ids, err := benchWorkspace(ctx, store, n, now, "")
	if err != nil {
		return out, err
	}
	ex := &lastReturn{Sleep: o.Sleep}
	engs := make([]*jobs.Engine, len(stores))
	for i, s := range stores {
		eng, stop, err := startBenchEngine(ctx, s, ws, ids, conc, ex)
		if err != nil {
			return out, err
		}
		defer stop()
		engs[i] = eng
	}
	eng := engs[0]

	req := benchRequest(chunk, min(conc*o.Instances, jobs.MaxConcurrentRunsCap))
	t0 := time.Now()
	if _, err := eng.Preview(ctx, req); err != nil {
		return out, err
	}
	out.PreviewMs = round(float64(time.Since(t0).Microseconds()) / 1000)
	sub, done, err := watchProfiled(engs, prof)
	if err != nil {
		return out, err
	}
	defer done()
	stepsBefore := stepsOf(engs)
	t1 := time.Now()
	c, err := eng.Create(ctx, req, "", "bench")
	if err != nil {
		return out, err
	}
	out.CreateMs = round(float64(time.Since(t1).Microseconds()) / 1000)
	out.Chunks = c.Backfill.TotalChunks
	b, err := waitBackfillEnd(ctx, store, sub, c.Backfill.ID)
	if err != nil {
		return out, err
	}
	wall := time.Since(t1)
	out.State = b.State
	out.WallS = round(wall.Seconds())
	out.RunsPerS = round(float64(out.Chunks) / wall.Seconds())
	out.PartitionsPerS = round(float64(n) / wall.Seconds())
	out.RatioToRaw = float64(int64(out.PartitionsPerS/out.RawPartitionsPerS*10000+0.5)) / 10000
	if b.FinishedAt != nil {
		lag := float64(*b.FinishedAt) - float64(ex.at.Load())/1e6
		out.CompletionLagMs = round(max(lag, 0))
	}
	out.PeakRSSMB = peakRSSMB()
	if out.Chunks > 0 {
		out.StepsPerChunk = round(float64(stepsOf(engs)-stepsBefore) / float64(out.Chunks))
	}
	if b.State != db.BackfillSucceeded {
		return out, fmt.Errorf("benchmark backfill ended %s", b.State)
	}
	return out, nil
}

// ErrDatabaseInUse is a --db whose database holds a workspace already: the
// benchmark would replace it with its own asset.
type ErrDatabaseInUse struct{ Assets int }

func (e *ErrDatabaseInUse) Error() string {
	what := "assets"
	if e.Assets == 1 {
		what = "asset"
	}
	return fmt.Sprintf("the database holds a workspace already (%d %s); give the benchmark an empty database, it writes its own asset and backfill", e.Assets, what)
}

// openInstances opens n stores on the database at loc (one per instance,
// each with its own connections), the first of which must hold no asset
// but the benchmark's.
func openInstances(ctx context.Context, loc string, n int) ([]*db.Store, error) {
	var stores []*db.Store
	for range n {
		s, err := db.Open(loc)
		if err != nil {
			return stores, err
		}
		stores = append(stores, s)
	}
	ids, err := stores[0].AssetIDs(ctx)
	if err != nil {
		return stores, err
	}
	others := 0
	for k := range ids {
		if k != "bench.events" {
			others++
		}
	}
	if others > 0 {
		return stores, &ErrDatabaseInUse{Assets: len(ids)}
	}
	return stores, nil
}

// watchProfiled subscribes to every event of the engines engs (what
// waitBackfillEnd waits on) and starts the CPU profile on prof (nil:
// none); done stops the profile and the subscriptions.
func watchProfiled(engs []*jobs.Engine, prof *os.File) (sub <-chan struct{}, done func(), err error) {
	sub, unsub, err := subscribeAll(engs)
	if err != nil {
		return nil, nil, err
	}
	if prof == nil {
		return sub, unsub, nil
	}
	if err := pprof.StartCPUProfile(prof); err != nil {
		unsub()
		return nil, nil, err
	}
	return sub, func() { pprof.StopCPUProfile(); unsub() }, nil
}

// subscribeAll merges the subscriptions to every event of each engine of
// engs (each instance publishes its own steps' changes).
func subscribeAll(engs []*jobs.Engine) (<-chan struct{}, func(), error) {
	if len(engs) == 1 {
		return engs[0].Broker().Subscribe(jobs.TopicAll)
	}
	merged := make(chan struct{}, 1)
	stop := make(chan struct{})
	var unsubs []func()
	unsubAll := func() {
		close(stop)
		for _, u := range unsubs {
			u()
		}
	}
	for _, e := range engs {
		sub, unsub, err := e.Broker().Subscribe(jobs.TopicAll)
		if err != nil {
			unsubAll()
			return nil, nil, err
		}
		unsubs = append(unsubs, unsub)
		go func() {
			for {
				select {
				case <-stop:
					return
				case _, ok := <-sub:
					if !ok {
						return
					}
					select {
					case merged <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return merged, unsubAll, nil
}

// benchRequest is the benchmark backfill: every partition of bench.events,
// in chunks of chunk, conc runs at a time.
func benchRequest(chunk int64, conc int) jobs.Request {
	return jobs.Request{Assets: []string{"bench.events"}, Selector: jobs.Selector{Type: "range"}, ChunkSize: chunk, MaxConcurrentRuns: int64(conc)}
}

// startBenchEngine starts the real controller on store for ws, with
// executor ex and at most conc runs at a time; stop stops it and waits.
func startBenchEngine(ctx context.Context, store *db.Store, ws *catalog.Workspace, ids map[string]int64, conc int, ex jobs.Executor) (eng *jobs.Engine, stop func(), err error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err = jobs.NewEngine(ctx, store, func() (*catalog.Workspace, map[string]int64) { return ws, ids }, log,
		jobs.Options{MaxConcurrentRuns: conc, Executor: ex, Tick: 50 * time.Millisecond})
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pprof.Do(rctx, pprof.Labels("part", "engine"), func(rctx context.Context) { _ = eng.Run(rctx, time.Second) })
	}()
	return eng, func() { cancel(); <-done }, nil
}

// benchWorkspace syncs a workspace of one hourly asset, bench.events, of n
// partitions up to now, and the assets of the YAML extra (indented under
// assets:), into store.
func benchWorkspace(ctx context.Context, store *db.Store, n int64, now time.Time, extra string) (*catalog.Workspace, map[string]int64, error) {
	start := now.Truncate(time.Hour).Add(-time.Duration(n) * time.Hour)
	yaml := fmt.Sprintf(`assets:
  bench.events:
    partitions: {hourly: {start: %q}}
    code_version: v1
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms}}
`, start.Format("2006-01-02-15:04")) + extra
	ws, err := catalog.ParseWorkspace("bench.yaml", []byte(yaml))
	if err != nil {
		return nil, nil, err
	}
	if err := store.SyncWorkspace(ctx, ws, "bench", now); err != nil {
		return nil, nil, err
	}
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ws, ids, nil
}

// waitBackfillEnd polls backfill id, on each event of sub and at least each
// second, until it is finished.
func waitBackfillEnd(ctx context.Context, store *db.Store, sub <-chan struct{}, id string) (db.Backfill, error) {
	var b db.Backfill
	var err error
	for {
		select {
		case <-sub:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return b, ctx.Err()
		}
		b, err = store.Backfill(ctx, id)
		if err != nil {
			return b, err
		}
		if db.BackfillTerminal(b.State) {
			return b, nil
		}
	}
}

// peakRSSMB reads the process's peak resident set size (Linux).
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return round(kb / 1024)
			}
		}
	}
	return 0
}
