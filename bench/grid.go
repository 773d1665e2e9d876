package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// GridResult is the result line of `tessera bench grid`.
type GridResult struct {
	Bench      string  `json:"bench"`
	Partitions int     `json:"partitions"`
	Requests   int     `json:"requests"`
	P50ms      float64 `json:"p50_ms"`
	P95ms      float64 `json:"p95_ms"`
	HTMLBytes  int     `json:"html_bytes"`
	ZoomP50ms  float64 `json:"zoomed_p50_ms"`
	ZoomBytes  int     `json:"zoomed_html_bytes"`
	LoadS      float64 `json:"load_s"`
}

// Grid builds a temporary database holding one hourly asset whose N
// partitions end now, with mixed statuses recorded through the store's
// ingest path, then renders its page through the real router.
func Grid(ctx context.Context, n, requests int) (GridResult, error) {
	store, loaded, now, cleanup, err := hourlyAsset(ctx, n)
	if err != nil {
		return GridResult{}, err
	}
	defer cleanup()
	ws := loaded.Workspace
	a := ws.Assets[0]
	sp := a.Scheme.Space(now, nil)
	if sp.Len() != int64(n) {
		return GridResult{}, fmt.Errorf("bench asset has %d partitions, want %d", sp.Len(), n)
	}
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]db.Materialization, 0, 20000)
	for i := int64(0); i < int64(n); i++ {
		r := rng.Float64()
		if r < 0.05 || (i/5000)%17 == 3 { // scattered holes and whole missing stretches
			continue
		}
		st := db.StatusMaterialized
		if r < 0.08 {
			st = db.StatusFailed
		}
		batch = append(batch, db.Materialization{AssetID: loaded.IDs[a.Key], AssetKey: a.Key, Partition: sp.Key(i), Idx: i,
			Status: st, CodeVersion: "v1", RunID: fmt.Sprintf("bench-%d", i/100), Source: "bench", At: now})
		if len(batch) == cap(batch) || i == int64(n)-1 {
			if _, err := store.RecordMaterializations(ctx, batch, "bench", "", now); err != nil {
				return GridResult{}, err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if _, err := store.RecordMaterializations(ctx, batch, "bench", "", now); err != nil {
			return GridResult{}, err
		}
	}
	load := time.Since(t0)
	srv := startPageServer(store, loaded, nil)
	defer srv.Close()
	p50, p95, size, err := timeGets(srv.URL+handlers.AssetHref(a.Key), requests)
	if err != nil {
		return GridResult{}, err
	}
	mid := int64(n / 2)
	zoom := srv.URL + handlers.AssetHref(a.Key) + "?from=" + sp.Key(mid) + "&to=" + sp.Key(min(mid+int64(n)/10, int64(n)-1))
	zp50, _, zsize, err := timeGets(zoom, requests)
	if err != nil {
		return GridResult{}, err
	}
	return GridResult{Bench: "grid", Partitions: n, Requests: requests, P50ms: p50, P95ms: p95, HTMLBytes: size,
		ZoomP50ms: zp50, ZoomBytes: zsize, LoadS: round(load.Seconds())}, nil
}

// timeGets GETs url once to warm caches, then requests times, and returns
// p50 and p95 in ms and the body size.
func timeGets(url string, requests int) (p50, p95 float64, size int, err error) {
	if _, _, _, err := timeGetsAfter(url, 1, func() error { return nil }); err != nil {
		return 0, 0, 0, err
	}
	return timeGetsAfter(url, requests, func() error { return nil })
}

// hourlyAsset opens a database in a temporary directory holding one
// hourly asset, bench.events, whose n partitions end now. cleanup closes and
// removes it.
func hourlyAsset(ctx context.Context, n int) (store *db.Store, loaded *handlers.Workspace, now time.Time, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "tessera-bench-")
	if err != nil {
		return nil, nil, now, nil, err
	}
	store, err = db.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, now, nil, err
	}
	cleanup = func() { store.Close(); os.RemoveAll(dir) }
	now = time.Now().UTC()
	start := now.Truncate(time.Hour).Add(-time.Duration(n) * time.Hour)
	yaml := fmt.Sprintf(`assets:
  bench.events:
    partitions: {hourly: {start: %q}}
    code_version: v1
    executor: {demo: {duration: 1s}}
`, start.Format("2006-01-02-15:04"))
	ws, err := catalog.ParseWorkspace("bench.yaml", []byte(yaml))
	if err == nil {
		loaded, err = handlers.LoadWorkspace(ctx, store, ws, "bench", "bench", now)
	}
	if err != nil {
		cleanup()
		return nil, nil, now, nil, err
	}
	return store, loaded, now, cleanup, nil
}

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
