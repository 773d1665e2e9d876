package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Seed writes believable history for a fresh database: most partitions
// materialized, a few failures (some retried successfully), a few gaps, the
// newest partitions not yet built, and older partitions of assets whose
// code_version ends in a number built with the previous version, and a
// watermark at the newest built window of each time-partitioned asset. It does
// nothing when any partition status exists, and returns how many partitions
// it recorded. The same seed gives the same history.
func Seed(ctx context.Context, store *db.Store, ws *catalog.Workspace, ids map[string]int64, now time.Time) (int, error) {
	if seeded, err := store.AnyPartitionStatus(ctx); err != nil || seeded {
		return 0, err
	}
	dyn, err := seedDynamicKeys(ctx, store, ws, now)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(42, 7))
	total := 0
	for ai, a := range ws.Assets {
		n, err := seedAsset(ctx, store, a, ai, ids, dyn, rng, now)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// seedDynamicKeys adds a few keys to the set of each dynamically
// partitioned asset.
func seedDynamicKeys(ctx context.Context, store *db.Store, ws *catalog.Workspace, now time.Time) (db.DynamicKeys, error) {
	dyn := db.DynamicKeys{}
	for _, a := range ws.Assets {
		if ds, ok := a.Scheme.(catalog.DynamicScheme); ok {
			keys := []string{"acme-feed", "globex-sftp", "initech-api", "umbrella-s3", "hooli-kafka", "stark-gcs"}
			if _, err := store.AddDynamicKeys(ctx, ds.Set(), keys, "demo-seed", now); err != nil {
				return nil, err
			}
			dyn[ds.Set()] = keys
		}
	}
	return dyn, nil
}

// seedAsset records the history of asset a (the ai-th of the workspace) and
// its watermark; it returns how many partitions it recorded.
func seedAsset(ctx context.Context, store *db.Store, a *catalog.Asset, ai int, ids map[string]int64, dyn db.DynamicKeys, rng *rand.Rand, now time.Time) (int, error) {
	total := 0
	sp := a.Scheme.Space(now, dyn)
	size := sp.Len()
	ts, _, isTime := catalog.SchemeTimeDim(a.Scheme)
	perRow := int64(1)
	if ms, ok := sp.(interface{ DimSpaces() []catalog.Space }); ok && isTime {
		for _, d := range ms.DimSpaces()[1:] {
			perRow *= d.Len()
		}
	}
	windows := size / perRow
	// A gap of a few windows at about a third of the history, and the
	// newest windows not yet built (the pipeline lags a little).
	gapAt, gapLen := windows/3, max(windows/200, 2)
	lag := int64(2 + ai%3)
	oldVersion := previousVersion(a.CodeVersion)
	batch := make([]db.Materialization, 0, 2000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := store.RecordMaterializations(ctx, batch, "demo-seed", "", now)
		batch = batch[:0]
		return err
	}
	for i := int64(0); i < size; i++ {
		w := i / perRow
		if w >= gapAt && w < gapAt+gapLen || w >= windows-lag && isTime {
			continue
		}
		if !isTime && i == size-1 && size > 2 {
			continue // one static/dynamic partition never built
		}
		key := sp.Key(i)
		at := now.Add(-time.Duration(size-i) * time.Minute)
		if isTime {
			at = ts.WindowStart(w + 1).Add(time.Duration(5+rng.IntN(50)) * time.Minute)
		}
		if at.After(now) {
			at = now.Add(-time.Minute)
		}
		code := a.CodeVersion
		if oldVersion != "" && w < windows*2/3 {
			code = oldVersion
		}
		run := fmt.Sprintf("seed-%s-%d", a.Key, i)
		m := db.Materialization{AssetID: ids[a.Key], AssetKey: a.Key, Partition: key, Idx: i, CodeVersion: code,
			RunID: run, Source: "seed", StartedAt: at.Add(-seedDuration(a, rng)), At: at}
		batch = seedOutcome(batch, m, a, rng, run, at)
		total++
		if len(batch) >= 2000 {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := flush(); err != nil {
		return total, err
	}
	// The live pipeline's ceiling: it has processed up to its newest
	// built window, so "fill gaps" has something to fill.
	if isTime && windows > lag {
		last := (windows-lag)*perRow - 1
		if err := store.SetWatermark(ctx, ids[a.Key], a.Key, sp.Key(last), last, "demo-seed", now); err != nil {
			return total, err
		}
	}
	return total, nil
}

// seedOutcome appends m to batch as a success or a failure, or as a success
// after a failed first attempt (two instances).
func seedOutcome(batch []db.Materialization, m db.Materialization, a *catalog.Asset, rng *rand.Rand, run string, at time.Time) []db.Materialization {
	r := rng.Float64()
	switch {
	case r < 0.012:
		seedFailure(&m, a, rng)
	case r < 0.03:
		// Failed once, then a retry succeeded: two instances.
		f := m
		f.RunID, f.At = run+"-a1", at.Add(-10*time.Minute)
		f.StartedAt = f.At.Add(-seedDuration(a, rng))
		seedFailure(&f, a, rng)
		batch = append(batch, f)
		fallthrough
	default:
		m.Status = db.StatusMaterialized
		meta, _ := json.Marshal(map[string]any{"rows": 1000 + rng.IntN(90000), "bytes": 1 << (16 + rng.IntN(8))})
		m.Metadata = meta
	}
	return append(batch, m)
}

var demoErrors = []string{
	"exit status 1: upstream file not found",
	"", // a timeout: worded and timed by seedFailure
	"warehouse: connection reset by peer",
	"row count check failed: 0 rows",
}

// seedFailure makes m a failed attempt with one of demoErrors. A timeout
// lasted exactly the asset's timeout (30 min when it sets none), so the
// error and the attempt's duration agree.
func seedFailure(m *db.Materialization, a *catalog.Asset, rng *rand.Rand) {
	m.Status, m.Error = db.StatusFailed, demoErrors[rng.IntN(len(demoErrors))]
	if m.Error == "" {
		limit := a.Timeout
		if limit <= 0 {
			limit = 30 * time.Minute
		}
		m.Error = "timeout after " + catalog.FormatDuration(limit)
		m.StartedAt = m.At.Add(-limit)
	}
}

// previousVersion turns "v3" into "v2"; "" when there is no number to lower.
func previousVersion(v string) string {
	if len(v) < 2 || v[0] != 'v' {
		return ""
	}
	var n int
	if _, err := fmt.Sscanf(v[1:], "%d", &n); err != nil || n < 2 || fmt.Sprintf("v%d", n) != v {
		return ""
	}
	return fmt.Sprintf("v%d", n-1)
}

// seedDuration is how long the simulated pipeline took to build one
// partition: what the asset's demo executor takes (so that a backfill's
// estimate, made from these reports, matches what the demo backfill then
// takes), else a few minutes.
func seedDuration(a *catalog.Asset, rng *rand.Rand) time.Duration {
	if d := a.Executor.Demo; d != nil && d.MaxDuration > 0 {
		span := max(d.MaxDuration-d.MinDuration, 0)
		return d.MinDuration + time.Duration(rng.Int64N(int64(span)+1))
	}
	return time.Duration(20+rng.IntN(300)) * time.Second
}
