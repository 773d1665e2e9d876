package jobs

import (
	"context"
	"slices"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// AssetPreview is one asset's part of a preview.
type AssetPreview struct {
	Asset      string           `json:"asset"`
	Partitions int64            `json:"partitions"`
	Chunks     int64            `json:"chunks"`
	Status     map[string]int64 `json:"status"`
}

// Skipped is a partition the backfill would not build now, and why.
type Skipped struct {
	Asset     string `json:"asset"`
	Partition string `json:"partition"`
	Reason    string `json:"reason"`
}

// Preview is what a backfill request would do; it writes nothing.
type Preview struct {
	TotalPartitions int64          `json:"total_partitions"`
	TotalChunks     int64          `json:"total_chunks"`
	TotalRuns       int64          `json:"total_runs"`
	Assets          []AssetPreview `json:"assets"`
	FirstChunk      struct {
		Asset string `json:"asset"`
		// Partitions is the first chunk's size; Keys lists its first
		// 1,000 keys at most.
		Partitions int64    `json:"partitions"`
		Keys       []string `json:"keys"`
	} `json:"first_chunk"`
	Status          map[string]int64 `json:"status"`
	SkippedCount    int64            `json:"skipped_count"`
	Skipped         []Skipped        `json:"skipped"`
	EstimateSeconds *float64         `json:"estimated_seconds"`
	// EstimateRange, when set, is what the estimate may be when recent runs
	// had another size than these chunks: from time per partition
	// (estimated_seconds) to each run as long as a recent one, lowest first.
	EstimateRange *[2]float64 `json:"estimated_range_seconds,omitempty"`
	// Basis is what the estimate rests on, as names and numbers: the
	// pages and the API word it (jobs words no estimate, so that counts
	// and durations read as everywhere else on the pages).
	Basis EstimateBasis `json:"-"`
	// Estimate is the estimate in words, for the API: Preview leaves it
	// empty and the HTTP layer words Basis into it.
	Estimate string `json:"estimate"`
}

// EstimateBasis is what a preview's duration estimate rests on.
// Its JSON is how a sensor's dry run stores it (StoredOutcomes); the API
// does not show it.
type EstimateBasis struct {
	Assets      int       `json:"assets"`                 // assets previewed
	NoHistory   []string  `json:"no_history,omitempty"`   // assets without a finished run or reported duration
	FromReports []string  `json:"from_reports,omitempty"` // assets estimated from reported durations (no run yet)
	Sizes       []RunSize `json:"sizes,omitempty"`        // assets whose recent runs had another size than these chunks
	ChunkSize   int64     `json:"chunk_size"`             // the backfill's chunk size
}

// RunSize is the mean size of an asset's recent runs.
type RunSize struct {
	Asset          string  `json:"asset"`
	PartitionsARun float64 `json:"partitions_a_run"`
}

// Preview resolves req like Create and describes the result.
func (e *Engine) Preview(ctx context.Context, req Request) (*Preview, error) {
	r, err := e.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	pv := &Preview{TotalPartitions: r.total, TotalChunks: r.chunks, TotalRuns: r.chunks, Status: map[string]int64{}, Skipped: []Skipped{}}
	est := &estimate{}
	ws, _ := e.workspace()
	for _, seg := range r.segments {
		a := r.assets[seg.Pos]
		sp := r.spaces[a.Key]
		ap := AssetPreview{Asset: seg.Asset, Partitions: seg.Partitions, Chunks: seg.Chunks, Status: map[string]int64{}}
		if seg.Explicit {
			if err := e.previewKeys(ctx, pv, &ap, seg, a, sp, r.idx[seg.Pos]); err != nil {
				return nil, err
			}
		} else {
			stored, err := e.previewRanges(ctx, pv, &ap, seg, a, r.ranges[seg.Pos])
			if err != nil {
				return nil, err
			}
			ap.Status[db.StatusMissing] = seg.Partitions - stored
		}
		for _, st := range []string{db.StatusMaterialized, db.StatusFailed, db.StatusInProgress, db.StatusMissing, "stale"} {
			ap.Status[st] += 0
			pv.Status[st] += ap.Status[st]
		}
		pv.Assets = append(pv.Assets, ap)
		previewFirstChunk(pv, r, seg, sp, seg.Size(req.ChunkSize))
		if err := e.estimateSegment(ctx, est, r, seg, a, ws); err != nil {
			return nil, err
		}
	}
	est.describe(pv, len(r.segments), r.req.ChunkSize)
	return pv, nil
}

// previewFirstChunk sets the preview's first chunk, from the first segment:
// its asset and up to 1,000 of its keys.
func previewFirstChunk(pv *Preview, r *resolved, seg db.Segment, sp catalog.Space, chunkSize int64) {
	if pv.FirstChunk.Keys == nil {
		pv.FirstChunk.Asset = seg.Asset
		pv.FirstChunk.Partitions = min(seg.Partitions, chunkSize)
		n := min(pv.FirstChunk.Partitions, 1000)
		if seg.Explicit {
			pv.FirstChunk.Keys = r.keys[:n]
		} else {
			for _, rg := range r.ranges[seg.Pos] {
				if int64(len(pv.FirstChunk.Keys)) >= n {
					break
				}
				pv.FirstChunk.Keys = append(pv.FirstChunk.Keys, sp.Keys(rg.Lo, min(rg.Hi-rg.Lo+1, n-int64(len(pv.FirstChunk.Keys))))...)
			}
		}
	}
}

// estimate gathers a backfill's duration estimate across its segments: ms
// from time per partition, otherMs what taking each run as long as a
// recent one would add or take away, and the assets without history, with
// durations from reports only, and whose recent runs had another size.
type estimate struct {
	ms, otherMs            float64
	noHistory, fromReports []string
	sizes                  []RunSize
}

// estimateSegment adds segment seg, of asset a, to the estimate: its
// recent runs (or reported durations) at the concurrency its backfill, the
// server and a's pool allow, and the pool's throttle.
func (e *Engine) estimateSegment(ctx context.Context, est *estimate, r *resolved, seg db.Segment, a *catalog.Asset, ws *catalog.Workspace) error {
	perPart, perRun, size, runs, err := e.Store.RecentRunMillis(ctx, seg.AssetID)
	if err != nil {
		return err
	}
	if runs == 0 {
		// No run yet: the durations a pipeline reported, if it did.
		if perPart, runs, err = e.Store.ReportedMillis(ctx, seg.AssetID); err != nil {
			return err
		}
		if runs > 0 {
			est.fromReports = append(est.fromReports, seg.Asset)
		}
	}
	if runs == 0 {
		est.noHistory = append(est.noHistory, seg.Asset)
		return nil
	}
	// Runs at once: the backfill's cap, the server's and the pool's.
	conc := min(r.req.MaxConcurrentRuns, seg.Chunks, int64(e.opts.MaxConcurrentRuns))
	var throttleMs float64
	if pool, ok := ws.Pools[a.Pool]; ok && a.Pool != "" {
		if pool.MaxConcurrentRuns > 0 {
			conc = min(conc, int64(pool.MaxConcurrentRuns))
		}
		if t := pool.Throttle; t != nil && t.Runs > 0 && seg.Chunks > int64(t.Runs) {
			// The token bucket starts full, then refills at Runs per Per.
			throttleMs = float64(seg.Chunks-int64(t.Runs)) * float64(t.Per.Milliseconds()) / float64(t.Runs)
		}
	}
	byPart := max(perPart*float64(seg.Partitions)/float64(max(conc, 1)), throttleMs)
	est.ms += byPart
	// Runs of another size: whether a run's time follows its size (work
	// per partition) or not (a fixed cost per run) is not known, so the
	// estimate is the range between the two.
	if cs := float64(seg.Size(r.req.ChunkSize)); perRun > 0 && size > 0 && (cs > 2*size || 2*cs < size) {
		byRun := max(perRun*float64(seg.Chunks)/float64(max(conc, 1)), throttleMs)
		est.otherMs += byRun - byPart
		est.sizes = append(est.sizes, RunSize{Asset: seg.Asset, PartitionsARun: size})
	}
	return nil
}

// describe sets pv's estimate: its figures and what they rest on
// (segments: how many assets; chunkSize: the backfill's).
func (est *estimate) describe(pv *Preview, segments int, chunkSize int64) {
	pv.Basis = EstimateBasis{Assets: segments, NoHistory: est.noHistory, FromReports: est.fromReports, Sizes: est.sizes, ChunkSize: chunkSize}
	if len(est.noHistory) == segments {
		return
	}
	s := est.ms / 1000
	pv.EstimateSeconds = &s
	if len(est.noHistory) == 0 && len(est.sizes) > 0 {
		lo, hi := s, (est.ms+est.otherMs)/1000
		if hi < lo {
			lo, hi = hi, lo
		}
		pv.EstimateRange = &[2]float64{lo, hi}
	}
}

// explicitRunMin is the length from which consecutive explicit keys are
// counted as a range (rollup blocks and stale ranges) rather than one by one.
const explicitRunMin = 64

// previewKeys counts the stored statuses of every key of an explicit list,
// whose indexes are idxs (sorted in place): runs of consecutive partitions
// as ranges, the scattered rest by index.
func (e *Engine) previewKeys(ctx context.Context, pv *Preview, ap *AssetPreview, seg db.Segment, a *catalog.Asset, sp catalog.Space, idxs []int64) error {
	slices.Sort(idxs)
	idxs = slices.Compact(idxs)
	var runs []db.SelRange
	var singles []int64
	for i := 0; i < len(idxs); {
		j := i
		for j+1 < len(idxs) && idxs[j+1] == idxs[j]+1 {
			j++
		}
		if j-i+1 >= explicitRunMin {
			runs = append(runs, db.SelRange{Lo: idxs[i], Hi: idxs[j]})
		} else {
			singles = append(singles, idxs[i:j+1]...)
		}
		i = j + 1
	}
	stored, err := e.previewRanges(ctx, pv, ap, seg, a, runs)
	if err != nil {
		return err
	}
	if len(singles) > 0 {
		rows, err := e.Store.StatusesAt(ctx, seg.AssetID, singles)
		if err != nil {
			return err
		}
		var stale []catalog.IndexRange
		if len(rows) > 0 {
			if stale, err = e.staleRanges(ctx, a, singles[0], singles[len(singles)-1]); err != nil {
				return err
			}
		}
		for _, ps := range rows {
			ap.Status[ps.Status]++
			if ps.Status == db.StatusInProgress {
				e.addSkipped(pv, seg.Asset, sp.Key(ps.Idx))
			}
			if ps.Materialized && inRanges(stale, ps.Idx) {
				ap.Status["stale"]++
			}
		}
		stored += int64(len(rows))
	}
	ap.Status[db.StatusMissing] += seg.Partitions - stored
	return nil
}

// previewRanges adds the stored statuses, stale partitions and partitions in
// progress of ranges to ap and pv, and returns how many partitions of the
// ranges have a status row.
func (e *Engine) previewRanges(ctx context.Context, pv *Preview, ap *AssetPreview, seg db.Segment, a *catalog.Asset, ranges []db.SelRange) (int64, error) {
	stored := int64(0)
	for _, rg := range ranges {
		c, err := e.Store.StatusCountsInRange(ctx, seg.AssetID, rg.Lo, rg.Hi)
		if err != nil {
			return 0, err
		}
		for st, n := range c {
			ap.Status[st] += n
			stored += n
		}
		if c[db.StatusInProgress] > 0 {
			keys, err := e.Store.InProgressKeys(ctx, seg.AssetID, rg.Lo, rg.Hi, 20)
			if err != nil {
				return 0, err
			}
			for _, k := range keys {
				e.addSkipped(pv, seg.Asset, k)
			}
			pv.SkippedCount += c[db.StatusInProgress] - int64(len(keys))
		}
	}
	// Stale as the staleness view classifies it (memoized per asset).
	if stored > 0 {
		for _, rg := range ranges {
			srs, err := e.staleRanges(ctx, a, rg.Lo, rg.Hi)
			if err != nil {
				return 0, err
			}
			for _, x := range srs {
				ap.Status["stale"] += x.Hi - x.Lo + 1
			}
		}
	}
	return stored, nil
}

func (e *Engine) addSkipped(pv *Preview, asset, key string) {
	pv.SkippedCount++
	if len(pv.Skipped) < 20 {
		pv.Skipped = append(pv.Skipped, Skipped{Asset: asset, Partition: key, Reason: "already being built by another run; waits for it"})
	}
}
