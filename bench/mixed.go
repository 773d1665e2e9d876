package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// MixedResult is the result line of `tessera bench mixed`.
type MixedResult struct {
	BenchBackfill
	Readers int `json:"readers"`
	// ReadNice is the nice increment the server's reads ran at
	// (web.Options.ReadNice; 0: the engine's priority).
	ReadNice int `json:"read_nice"`
	// The backfill alone, then on a fresh database of the same rows with
	// Readers clients reading pages and the API all the while; Rounds
	// times, alternating. SoloS and LoadedS are the medians of the rounds
	// (each one's in SoloAllS, LoadedAllS), and ThroughputRatio their ratio:
	// a backfill of 200,000 partitions lasts well under a second, and one
	// round's ratio of two such runs moved between 0.66 and 0.85 from one
	// run to the next on an idle machine.
	Rounds               int       `json:"rounds"`
	SoloS                float64   `json:"solo_s"`
	LoadedS              float64   `json:"loaded_s"`
	SoloAllS             []float64 `json:"solo_all_s"`
	LoadedAllS           []float64 `json:"loaded_all_s"`
	SoloPartitionsPerS   float64   `json:"solo_partitions_per_s"`
	LoadedPartitionsPerS float64   `json:"loaded_partitions_per_s"`
	ThroughputRatio      float64   `json:"throughput_ratio"`
	// Reads answered while the loaded backfills ran (every round's), by
	// page kind and over all of them.
	Reads     int     `json:"reads"`
	ReadsPerS float64 `json:"reads_per_s"`
	// The process's CPU time (user and system) during each run, and what
	// the loaded run used beyond the solo one per read answered: the
	// readers run as fast as they are answered, so they use whatever CPU the
	// engine leaves, and a cheaper read shows as more reads for the same
	// CPU (this figure), not as less CPU taken from the engine.
	SoloCPUs     float64               `json:"solo_cpu_s"`
	LoadedCPUs   float64               `json:"loaded_cpu_s"`
	CPUPerReadMs float64               `json:"cpu_per_read_ms"`
	Pages        map[string]PageTiming `json:"pages"`
	P50ms        float64               `json:"p50_ms"`
	P99ms        float64               `json:"p99_ms"`
	TargetRatio  float64               `json:"target_ratio"`
	TargetP99ms  float64               `json:"target_p99_ms"`
}

// PageTiming is the latency of one kind of read under load.
type PageTiming struct {
	Requests int     `json:"requests"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
}

// mixedDownstream is a daily asset reading bench.events, so that the status
// board and the overview derive staleness across a dependency while the
// backfill writes its upstream.
const mixedDownstream = `  bench.daily:
    partitions: {daily: {start: %q}}
    deps: [bench.events]
    code_version: v1
    executor: {demo: {duration: 1ms}}
`

// Mixed runs a backfill of n partitions (chunks of chunk, conc runs at a
// time, noop executor) through the real controller and store, rounds times
// two, each time on a fresh temporary database: alone, then with readers
// clients reading, over real HTTP, the pages and API a user of a running
// backfill reads, each as fast as it is answered, the server's reads at
// readNice. A non-nil prof receives a CPU profile of the first loaded run.
func Mixed(ctx context.Context, n, chunk int64, conc, readers, rounds, readNice int, prof *os.File) (MixedResult, error) {
	res := MixedResult{BenchBackfill: BenchBackfill{Bench: "mixed", Partitions: n, ChunkSize: chunk, Concurrency: conc, Executor: "noop"}, Readers: readers,
		ReadNice: readNice, Rounds: rounds, TargetRatio: 0.7, TargetP99ms: 300}
	var solos, loadeds []float64
	var soloCPU, loadedCPU, loadedTotal time.Duration
	reads := map[string][]time.Duration{}
	for r := range rounds {
		solo, err := mixedRun(ctx, n, chunk, conc, 0, readNice, nil)
		if err != nil {
			return res, err
		}
		p := prof
		if r > 0 {
			p = nil
		}
		loaded, err := mixedRun(ctx, n, chunk, conc, readers, readNice, p)
		if err != nil {
			return res, err
		}
		res.Chunks = solo.chunks
		solos, loadeds = append(solos, solo.wall.Seconds()), append(loadeds, loaded.wall.Seconds())
		res.SoloAllS, res.LoadedAllS = append(res.SoloAllS, round(solo.wall.Seconds())), append(res.LoadedAllS, round(loaded.wall.Seconds()))
		soloCPU, loadedCPU, loadedTotal = soloCPU+solo.cpu, loadedCPU+loaded.cpu, loadedTotal+loaded.wall
		for kind, lats := range loaded.reads {
			reads[kind] = append(reads[kind], lats...)
		}
	}
	soloWall, loadedWall := median(solos), median(loadeds)
	res.SoloS, res.LoadedS = round(soloWall), round(loadedWall)
	res.SoloPartitionsPerS = round(float64(n) / soloWall)
	res.LoadedPartitionsPerS = round(float64(n) / loadedWall)
	res.ThroughputRatio = float64(int64(soloWall/loadedWall*1000+0.5)) / 1000
	res.Pages = map[string]PageTiming{}
	var all []time.Duration
	for kind, lats := range reads {
		slices.Sort(lats)
		res.Pages[kind] = PageTiming{Requests: len(lats), P50ms: percentileMs(lats, 0.50), P99ms: percentileMs(lats, 0.99)}
		all = append(all, lats...)
	}
	slices.Sort(all)
	res.Reads = len(all)
	res.ReadsPerS = round(float64(len(all)) / loadedTotal.Seconds())
	res.P50ms, res.P99ms = percentileMs(all, 0.50), percentileMs(all, 0.99)
	// Per round.
	res.SoloCPUs, res.LoadedCPUs = round(soloCPU.Seconds()/float64(rounds)), round(loadedCPU.Seconds()/float64(rounds))
	if len(all) > 0 {
		res.CPUPerReadMs = round(float64((loadedCPU - soloCPU).Microseconds()) / 1000 / float64(len(all)))
	}
	return res, nil
}

// mixedOutcome is one run of Mixed: the backfill's wall time from create to
// its end, and the latencies of the reads by kind.
type mixedOutcome struct {
	wall   time.Duration
	cpu    time.Duration // the process's, over wall
	chunks int64
	reads  map[string][]time.Duration
}

// mixedRun builds a fresh database, starts the engine and the server, and
// runs the backfill with readers clients reading meanwhile.
func mixedRun(ctx context.Context, n, chunk int64, conc, readers, readNice int, prof *os.File) (mixedOutcome, error) {
	var out mixedOutcome
	store, cleanup, err := tempStore("mixed")
	if err != nil {
		return out, err
	}
	defer cleanup()
	now := time.Now().UTC()
	first := now.Truncate(time.Hour).Add(-time.Duration(n) * time.Hour)
	ws, ids, err := benchWorkspace(ctx, store, n, now, fmt.Sprintf(mixedDownstream, first.Format("2006-01-02")))
	if err != nil {
		return out, err
	}
	eng, stop, err := startBenchEngine(ctx, store, ws, ids, conc, jobs.NoopExecutor{})
	if err != nil {
		return out, err
	}
	defer stop()
	labels := &pageLabels{next: pageHandler(store, &handlers.Workspace{Workspace: ws, Source: "bench", IDs: ids}, eng, readNice)}
	srv := httptest.NewServer(labels)
	defer srv.Close()
	sub, done, err := watchProfiled([]*jobs.Engine{eng}, prof)
	if err != nil {
		return out, err
	}
	defer done()
	t0, cpu0 := time.Now(), processCPU()
	c, err := eng.Create(ctx, benchRequest(chunk, conc), "", "bench")
	if err != nil {
		return out, err
	}
	out.chunks = c.Backfill.TotalChunks
	reads := mixedReads(c.Backfill.ID)
	labels.setReads(reads)
	stopReads := make(chan struct{})
	readsDone := make(chan readOutcome, 1)
	go func() { readsDone <- readPages(ctx, srv.URL, reads, readers, stopReads) }()
	b, err := waitBackfillEnd(ctx, store, sub, c.Backfill.ID)
	out.wall, out.cpu = time.Since(t0), processCPU()-cpu0
	close(stopReads)
	got := <-readsDone
	if err != nil {
		return out, err
	}
	if got.err != nil {
		return out, got.err
	}
	if b.State != db.BackfillSucceeded {
		return out, fmt.Errorf("benchmark backfill ended %s", b.State)
	}
	out.reads = got.lats
	return out, nil
}

// mixedRead is one kind of read and its path.
type mixedRead struct{ kind, path string }

// mixedReads are what a user watching backfill id reads: the overview, the
// asset's grid, the backfill page and its live partials, the status board,
// and the API a script polls.
func mixedReads(id string) []mixedRead {
	bf := handlers.BackfillHref(id)
	return []mixedRead{
		{"overview", "/"},
		{"asset_grid", handlers.AssetHref("bench.events")},
		{"backfill_page", bf},
		{"backfill_grid", bf + "/grid"},
		{"backfill_summary", bf + "/summary"},
		{"status_board", "/status"},
		{"api_backfill", "/api/v1/backfills/" + id},
		{"api_partitions", "/api/v1/assets/bench.events/partitions"},
	}
}

// readOutcome is the latencies of the reads by kind, or the first failure.
type readOutcome struct {
	lats map[string][]time.Duration
	err  error
}

// readPages runs readers clients until stop is closed, each GETting the
// reads in turn (each client starting at a kind of its own), the next as
// soon as the last is answered.
func readPages(ctx context.Context, base string, reads []mixedRead, readers int, stop <-chan struct{}) readOutcome {
	out := readOutcome{lats: map[string][]time.Duration{}}
	if readers == 0 {
		return out
	}
	transport := &http.Transport{MaxIdleConnsPerHost: readers}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, err := readLoop(ctx, client, base, reads, r, stop)
			mu.Lock()
			defer mu.Unlock()
			for k, ds := range mine {
				out.lats[reads[k].kind] = append(out.lats[reads[k].kind], ds...)
			}
			if err != nil && out.err == nil {
				out.err = err
			}
		}()
	}
	wg.Wait()
	return out
}

// readLoop GETs the reads in turn from the first-th on until stop is
// closed, and returns the latencies by index of reads.
func readLoop(ctx context.Context, client *http.Client, base string, reads []mixedRead, first int, stop <-chan struct{}) ([][]time.Duration, error) {
	lats := make([][]time.Duration, len(reads))
	for i := first; ; i++ {
		select {
		case <-stop:
			return lats, nil
		default:
		}
		k := i % len(reads)
		d, err := timedGet(ctx, client, base+reads[k].path)
		if err != nil {
			return lats, err
		}
		lats[k] = append(lats[k], d)
	}
}

// timedGet GETs url and reads the whole answer; it fails unless the answer
// is 200.
func timedGet(ctx context.Context, client *http.Client, url string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return 0, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	// Read to the last byte without keeping it: the readers share the
	// process, and so the cores and the garbage collector, with the engine
	// and the server they measure; io.ReadAll of each 250 kB page (a
	// buffer grown by doubling, 280 pages a second) was the client's
	// garbage, collected in the engine's time.
	_, err = io.Copy(io.Discard, resp.Body)
	d := time.Since(t)
	if err != nil {
		return 0, err
	}
	return d, nil
}
