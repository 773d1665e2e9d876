package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/web"
)

// StalenessResult is the result line of `tessera bench staleness`.
type StalenessResult struct {
	Bench          string  `json:"bench"`
	Assets         int     `json:"assets"`
	StatusRows     int64   `json:"status_rows"`
	BigPartitions  int     `json:"big_asset_partitions"`
	Requests       int     `json:"requests"`
	StatusP50      float64 `json:"status_p50_ms"`
	StatusP95      float64 `json:"status_p95_ms"`
	AssetP50       float64 `json:"asset_staleness_p50_ms"`
	AssetP95       float64 `json:"asset_staleness_p95_ms"`
	AssetStatP50   float64 `json:"asset_status_view_p50_ms"`
	AssetStatP95   float64 `json:"asset_status_view_p95_ms"`
	JSONP50        float64 `json:"status_json_p50_ms"`
	JSONP95        float64 `json:"status_json_p95_ms"`
	StatusColdP50  float64 `json:"status_after_write_p50_ms"`
	AssetColdP50   float64 `json:"asset_staleness_after_write_p50_ms"`
	JSONColdP50    float64 `json:"status_json_after_write_p50_ms"`
	Batch          int     `json:"batch"`
	AssetBatchP50  float64 `json:"asset_staleness_after_batch_p50_ms"`
	StatusBatchP50 float64 `json:"status_after_batch_p50_ms"`
	StatusFullP50  float64 `json:"status_full_cold_p50_ms"`
	AssetFullP50   float64 `json:"asset_staleness_full_cold_p50_ms"`
	JSONFullP50    float64 `json:"status_json_full_cold_p50_ms"`
	StatusRestart  float64 `json:"status_restart_p50_ms"`
	AssetRestart   float64 `json:"asset_staleness_restart_p50_ms"`
	JSONRestart    float64 `json:"status_json_restart_p50_ms"`
	StatusBytes    int     `json:"status_html_bytes"`
	// The overview, unfiltered and filtered by a name and a state; the
	// whole lineage graph it loads (/lineage, here its own page); and a
	// chain asset's page (its neighbourhood graph).
	OverviewP50         float64 `json:"overview_p50_ms"`
	OverviewP95         float64 `json:"overview_p95_ms"`
	OverviewBytes       int     `json:"overview_html_bytes"`
	OverviewFilterP50   float64 `json:"overview_filtered_p50_ms"`
	OverviewFilterBytes int     `json:"overview_filtered_html_bytes"`
	LineageP50          float64 `json:"lineage_p50_ms"`
	LineageP95          float64 `json:"lineage_p95_ms"`
	LineageBytes        int     `json:"lineage_html_bytes"`
	ChainAssetP50       float64 `json:"chain_asset_p50_ms"`
	ChainAssetBytes     int     `json:"chain_asset_html_bytes"`
	AssetBytes          int     `json:"asset_html_bytes"`
	LoadS               float64 `json:"load_s"`
	StaleOfBig          int64   `json:"big_asset_stale"`
	StaleReasonsOK      bool    `json:"every_reason_present"`
}

// Staleness builds a temporary database of 3*chains+2 assets (one hourly
// asset of big partitions reading a daily upstream, and chains chains of a
// daily raw, a daily aggregate of per partitions each and a monthly rollup)
// with mixed status rows, then times the status board, the big asset's
// staleness and status views and /status.json through the real router:
// warm, full cold, after a write to one asset, after a batch of batch
// partitions, and the first request after a restart (a new store and
// server on the same database file). A non-nil prof receives a CPU profile of the timed requests.
func Staleness(ctx context.Context, big, chains, per, requests, batch int, prof *os.File) (StalenessResult, error) {
	dir, err := os.MkdirTemp("", "tessera-bench-")
	if err != nil {
		return StalenessResult{}, err
	}
	defer os.RemoveAll(dir)
	store, err := db.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		return StalenessResult{}, err
	}
	defer store.Close()
	now := time.Now().UTC()
	ws, err := catalog.ParseWorkspace("bench.yaml", []byte(stalenessYAML(now, big, chains, per)))
	if err != nil {
		return StalenessResult{}, err
	}
	loaded, err := handlers.LoadWorkspace(ctx, store, ws, "bench", "bench", now)
	if err != nil {
		return StalenessResult{}, err
	}
	t0 := time.Now()
	rows, err := bulkStatus(ctx, store, ws, loaded.IDs, now)
	if err != nil {
		return StalenessResult{}, err
	}
	load := time.Since(t0)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, handlers.AuthConfig{AnonymousViewer: true})
	srv := httptest.NewServer(web.New(h, log))
	defer srv.Close()
	res := StalenessResult{Bench: "staleness", Assets: len(ws.Assets), StatusRows: rows, BigPartitions: big, Requests: requests, Batch: batch, LoadS: round(load.Seconds())}

	assetURL := srv.URL + handlers.AssetHref("big.hourly") + "?view=staleness"
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	// Full cold: an event of unknown effect before each request invalidates
	// every memoized fact (as after a restart).
	bump := func() error { return store.AppendBenchEvent(ctx, time.Now()) }
	// After a write: one partition of an asset reported materialized before
	// each request; only that asset and its downstreams are recomputed.
	rep := &reporter{ctx: ctx, store: store, ws: ws, ids: loaded.IDs, now: now, batch: batch}
	cold := max(requests/4, 3)
	if res.StatusFullP50, _, _, err = timeGetsAfter(srv.URL+"/status", cold, bump); err != nil {
		return res, err
	}
	if res.AssetFullP50, _, _, err = timeGetsAfter(assetURL, cold, bump); err != nil {
		return res, err
	}
	if res.JSONFullP50, _, _, err = timeGetsAfter(srv.URL+"/status.json", cold, bump); err != nil {
		return res, err
	}
	if res.StatusColdP50, _, _, err = timeGetsAfter(srv.URL+"/status", cold, rep.one("c000.raw")); err != nil {
		return res, err
	}
	if res.AssetColdP50, _, _, err = timeGetsAfter(assetURL, cold, rep.one("big.hourly")); err != nil {
		return res, err
	}
	if res.JSONColdP50, _, _, err = timeGetsAfter(srv.URL+"/status.json", cold, rep.one("c001.agg")); err != nil {
		return res, err
	}
	// After a batch: --batch consecutive partitions of the big asset
	// reported before each request, as a backfill running at full speed
	// writes them between two page views.
	if res.AssetBatchP50, _, _, err = timeGetsAfter(assetURL, cold, rep.bigBatch); err != nil {
		return res, err
	}
	if res.StatusBatchP50, _, _, err = timeGetsAfter(srv.URL+"/status", cold, rep.bigBatch); err != nil {
		return res, err
	}
	if res.StatusP50, res.StatusP95, res.StatusBytes, err = timeGets(srv.URL+"/status", requests); err != nil {
		return res, err
	}
	if res.AssetP50, res.AssetP95, res.AssetBytes, err = timeGets(assetURL, requests); err != nil {
		return res, err
	}
	// The asset's status view, which draws stale partitions too.
	if res.AssetStatP50, res.AssetStatP95, _, err = timeGets(srv.URL+handlers.AssetHref("big.hourly"), requests); err != nil {
		return res, err
	}
	if res.JSONP50, res.JSONP95, _, err = timeGets(srv.URL+"/status.json", requests); err != nil {
		return res, err
	}
	if res.OverviewP50, res.OverviewP95, res.OverviewBytes, err = timeGets(srv.URL+"/", requests); err != nil {
		return res, err
	}
	if res.OverviewFilterP50, _, res.OverviewFilterBytes, err = timeGets(srv.URL+"/?q=c00&state=failed", requests); err != nil {
		return res, err
	}
	if res.LineageP50, res.LineageP95, res.LineageBytes, err = timeGets(srv.URL+"/lineage", requests); err != nil {
		return res, err
	}
	if res.ChainAssetP50, _, res.ChainAssetBytes, err = timeGets(srv.URL+handlers.AssetHref("c001.agg"), requests); err != nil {
		return res, err
	}
	// After a restart: the first request of a new store and server on the
	// same file, after the writes above.
	file := filepath.Join(dir, "bench.db")
	if res.StatusRestart, err = timeRestarts(file, loaded, log, "/status", cold); err != nil {
		return res, err
	}
	if res.AssetRestart, err = timeRestarts(file, loaded, log, handlers.AssetHref("big.hourly")+"?view=staleness", cold); err != nil {
		return res, err
	}
	if res.JSONRestart, err = timeRestarts(file, loaded, log, "/status.json", cold); err != nil {
		return res, err
	}
	// Sanity: the big asset has every reason.
	if res.StaleOfBig, res.StaleReasonsOK, err = staleReasons(srv.URL + "/api/v1/assets/big.hourly/staleness"); err != nil {
		return res, err
	}
	return res, nil
}

// timeRestarts times, n times, the first request for path of a new store
// on file and a new server (opened and started untimed; each closed before
// the next, its background writes done): the first page after a restart.
func timeRestarts(file string, ws *handlers.Workspace, log *slog.Logger, path string, n int) (p50 float64, err error) {
	var ds []float64
	for range n {
		store, err := db.Open(file)
		if err != nil {
			return 0, err
		}
		h := handlers.New(store, ws, log)
		h.Auth = handlers.NewAuth(store, handlers.AuthConfig{AnonymousViewer: true})
		srv := httptest.NewServer(web.New(h, log))
		d, _, _, err := timeGetsAfter(srv.URL+path, 1, func() error { return nil })
		srv.Close()
		store.Close()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return round(ds[len(ds)/2]), nil
}

// reporter reports partitions materialized between timed requests, through
// the store's ingest path.
type reporter struct {
	ctx   context.Context
	store *db.Store
	ws    *catalog.Workspace
	ids   map[string]int64
	now   time.Time
	batch int   // partitions of the big asset per bigBatch
	seq   int   // reports of one so far
	next  int64 // the big asset's next partition to report in a batch
}

// one returns a write of one partition of asset (one of its newest hundred,
// in turn) reported materialized: only that asset and its downstreams are
// then recomputed.
func (r *reporter) one(asset string) func() error {
	return func() error {
		r.seq++
		a := r.ws.Asset(asset)
		sp := a.Scheme.Space(r.now, nil)
		i := sp.Len() - 1 - int64(r.seq%100)
		_, err := r.store.RecordMaterializations(r.ctx, []db.Materialization{{AssetID: r.ids[asset], AssetKey: asset, Partition: sp.Key(i), Idx: i,
			Status: db.StatusMaterialized, CodeVersion: a.CodeVersion, RunID: fmt.Sprintf("bench-write-%d", r.seq), Source: "bench", At: time.Now()}}, "bench", "", time.Now())
		return err
	}
}

// bigBatch reports the big asset's next batch partitions (consecutive,
// wrapping around) materialized, in one batch.
func (r *reporter) bigBatch() error {
	a := r.ws.Asset("big.hourly")
	sp := a.Scheme.Space(r.now, nil)
	ms := make([]db.Materialization, 0, r.batch)
	at := time.Now()
	for range r.batch {
		i := r.next % sp.Len()
		r.next++
		ms = append(ms, db.Materialization{AssetID: r.ids["big.hourly"], AssetKey: "big.hourly", Partition: sp.Key(i), Idx: i,
			Status: db.StatusMaterialized, CodeVersion: a.CodeVersion, RunID: fmt.Sprintf("bench-batch-%d", r.next), Source: "bench", At: at})
	}
	_, err := r.store.RecordMaterializations(r.ctx, ms, "bench", "", at)
	return err
}

// stalenessYAML is the staleness benchmark's workspace: big.hourly (big
// hourly partitions ending now) reading big.src (daily), and chains chains
// of a daily raw asset and a daily aggregate of per partitions each and a
// monthly rollup, in twelve groups.
func stalenessYAML(now time.Time, big, chains, per int) string {
	hourStart := now.Truncate(time.Hour).Add(-time.Duration(big) * time.Hour)
	dayStart := time.Date(hourStart.Year(), hourStart.Month(), hourStart.Day(), 0, 0, 0, 0, time.UTC)
	chainStart := now.Truncate(24*time.Hour).AddDate(0, 0, -per)
	monthStart := time.Date(chainStart.Year(), chainStart.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	var y strings.Builder
	y.WriteString("assets:\n")
	fmt.Fprintf(&y, "  big.src:\n    group: big\n    partitions: {daily: {start: %s}}\n    code_version: v1\n    executor: {demo: {duration: 1s}}\n", dayStart.Format("2006-01-02"))
	fmt.Fprintf(&y, "  big.hourly:\n    group: big\n    partitions: {hourly: {start: %q}}\n    deps: [big.src]\n    code_version: v2\n    freshness: {max_lag: 2h}\n    executor: {demo: {duration: 1s}}\n", hourStart.Format("2006-01-02-15:04"))
	for c := range chains {
		g := fmt.Sprintf("team%02d", c%12)
		fmt.Fprintf(&y, "  c%03d.raw:\n    group: %s\n    partitions: {daily: {start: %s}}\n    code_version: v1\n    freshness: {max_lag: 30h}\n    executor: {demo: {duration: 1s}}\n", c, g, chainStart.Format("2006-01-02"))
		fmt.Fprintf(&y, "  c%03d.agg:\n    group: %s\n    partitions: {daily: {start: %s}}\n    deps: [c%03d.raw]\n    code_version: v2\n    freshness: {by: \"09:00\", timezone: Europe/Berlin}\n    executor: {demo: {duration: 1s}}\n", c, g, chainStart.Format("2006-01-02"), c)
		fmt.Fprintf(&y, "  c%03d.monthly:\n    group: %s\n    partitions: {monthly: {start: %s}}\n    deps: [c%03d.agg]\n    code_version: v1\n    executor: {demo: {duration: 1s}}\n", c, g, monthStart.Format("2006-01-02"), c)
	}
	return y.String()
}

// staleReasons reads an asset's staleness from the API at url: how many of
// its partitions are stale, and whether every reason is among them.
func staleReasons(url string) (stale int64, everyReason bool, err error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false, err
	}
	var st struct {
		Stale    int64            `json:"stale"`
		ByReason map[string]int64 `json:"by_reason"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		return 0, false, err
	}
	everyReason = true
	for _, r := range catalog.StaleReasons {
		if st.ByReason[string(r)] == 0 {
			everyReason = false
		}
	}
	return st.Stale, everyReason, nil
}

// timeGetsAfter is timeGets with fn run (untimed) before each request.
func timeGetsAfter(url string, requests int, fn func() error) (p50, p95 float64, size int, err error) {
	var ds []float64
	for range requests {
		if err := fn(); err != nil {
			return 0, 0, 0, err
		}
		t := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			return 0, 0, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, 0, 0, fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, b)
		}
		ds = append(ds, float64(time.Since(t).Microseconds())/1000)
		size = len(b)
	}
	slices.Sort(ds)
	return round(ds[len(ds)/2]), round(ds[min(len(ds)*95/100, len(ds)-1)]), size, nil
}

// bulkStatus writes benchmark partition_status rows directly (one prepared
// insert in a few big transactions), then rebuilds partition_rollup from
// them and appends one event, so the store stays consistent. Mix: ~5% holes,
// ~3% failed, ~8% built with an old code version, ~0.1% tainted, upstream
// builds spread in time so some downstream partitions predate them.
func bulkStatus(ctx context.Context, store *db.Store, ws *catalog.Workspace, ids map[string]int64, now time.Time) (int64, error) {
	rng := rand.New(rand.NewPCG(7, 11))
	var total int64
	nowMs := now.UnixMilli()
	for _, a := range ws.Assets {
		sp := a.Scheme.Space(now, nil)
		n := sp.Len()
		id := ids[a.Key]
		const batch = 200_000
		for lo := int64(0); lo < n; lo += batch {
			hi := min(lo+batch, n)
			rows := make([]db.FixtureStatus, 0, hi-lo)
			for i := lo; i < hi; i++ {
				r := rng.Float64()
				if r < 0.05 {
					continue
				}
				status, mat := db.StatusMaterialized, true
				code := a.CodeVersion
				at := nowMs - rng.Int64N(72*3600*1000)
				row := db.FixtureStatus{AssetID: id, Key: sp.Key(i), Idx: i, AttemptAt: at, UpdatedAt: nowMs}
				switch {
				case r < 0.08:
					status = db.StatusFailed
					if rng.IntN(2) == 0 {
						mat = false
					}
				case r < 0.16:
					code = "v0"
				case r < 0.161:
					tainted, reason := nowMs-1000, "bench taint"
					row.TaintedAt, row.TaintReason = &tainted, &reason
				}
				row.Status, row.Materialized = status, mat
				if mat {
					row.MatAt, row.MatCode = &at, &code
				}
				rows = append(rows, row)
			}
			total += int64(len(rows))
			err := store.InsertStatusFixtures(ctx, rows)
			if err != nil {
				return 0, err
			}
		}
	}
	err := store.FinishStatusFixtures(ctx, total, now)
	return total, err
}
