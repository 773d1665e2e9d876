package handlers

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

var runStates = []string{db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled}

// outcomeGrids draws each asset's selection coloured by this backfill's
// outcome: one tile per selected partition (laid out like the asset page's
// grid, linking to its chunk's run) when the segment selects at most a grid's
// worth of partitions; else one tile per chunk (linking to its run) when few,
// buckets of chunks when many.
func (h *Handler) outcomeGrids(ctx context.Context, b db.Backfill) ([]views.ChunkGrid, error) {
	segs, err := db.Segments(ctx, h.Store.Reader(), b.ID)
	if err != nil {
		return nil, err
	}
	var out []views.ChunkGrid
	for _, s := range segs {
		g := views.ChunkGrid{Asset: s.Asset, Partitions: s.Partitions, Chunks: s.Chunks}
		if g.Partition, err = h.partitionOutcomeGrid(ctx, b, s); err != nil {
			return nil, err
		}
		switch {
		case g.Partition != nil:
		case s.Chunks <= ChunkTileLimit:
			if g.Tiles, err = h.chunkTiles(ctx, b, s); err != nil {
				return nil, err
			}
		default:
			if g.Strip, g.Size, err = h.chunkStrip(ctx, b, s); err != nil {
				return nil, err
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// partitionOutcomeGrid draws segment s one tile per selected partition,
// coloured by what this backfill did to it, or returns nil when s selects
// more partitions than the asset's grid layout draws as tiles (TileLimit),
// or when the engine or the asset's declaration is not there to resolve its
// keys. It reads the segment's keys as the controller does (one read of its
// ranges or explicit keys), its chunk runs, their instances of those keys and
// the backfill's failures of the asset: four queries whatever the tile count.
func (h *Handler) partitionOutcomeGrid(ctx context.Context, b db.Backfill, s db.Segment) (*views.Grid, error) {
	if h.Engine == nil || s.Partitions <= 0 || s.Partitions > TileLimit || h.Workspace().Asset(s.Asset) == nil {
		return nil, nil
	}
	a, err := h.asset(ctx, s.Asset)
	if err != nil {
		return nil, err
	}
	l := layoutFor(a)
	if s.Partitions > l.maxTiles() {
		return nil, nil
	}
	keys, idx, err := h.Engine.SegmentKeys(ctx, b, s)
	if err != nil {
		return nil, err
	}
	runs, err := h.Store.ChunkRuns(ctx, b.ID, s.FirstChunk, s.FirstChunk+s.Chunks-1)
	if err != nil {
		return nil, err
	}
	byChunk := make(map[int64]*db.Run, len(runs))
	ids := make([]string, 0, len(runs))
	for i := range runs {
		byChunk[runs[i].Chunk] = &runs[i]
		ids = append(ids, runs[i].ID)
	}
	insts, err := h.Store.RunInstances(ctx, s.AssetID, ids, keys)
	if err != nil {
		return nil, err
	}
	built := make(map[runKey]instFold, len(insts))
	for _, in := range insts { // oldest first: the last one is the latest attempt
		k := runKey{in.RunID, in.Key}
		f := built[k]
		f.materialized = f.materialized || in.Status == db.StatusMaterialized
		f.last = in.Status
		built[k] = f
	}
	fails, err := h.Store.SegmentFailures(ctx, b.ID, s.AssetID)
	if err != nil {
		return nil, err
	}
	failed := make(map[runKey]string, len(fails))
	for _, f := range fails {
		failed[runKey{f.RunID, f.Key}] = f.Reason
	}
	tiles := make([]views.Tile, len(keys))
	ordered := true
	for p, key := range keys {
		ch := s.FirstChunk + int64(p)/s.Size(b.ChunkSize)
		r := byChunk[ch]
		t := views.Tile{Key: key, Href: PartitionHref(s.Asset, key)}
		if r == nil {
			t.Status = partitionOutcome(b, nil, instFold{}, "")
			t.Title = fmt.Sprintf("%s · %s · chunk %d · not planned yet", key, views.OutcomeLabel(t.Status), ch)
		} else {
			k := runKey{r.ID, key}
			t.Status = partitionOutcome(b, r, built[k], failed[k])
			t.Href = RunHref(r.ID)
			t.Title = fmt.Sprintf("%s · %s · chunk %d · run %s", key, views.OutcomeLabel(t.Status), ch, r.ID)
		}
		tiles[p] = t
		ordered = ordered && idx[p] >= 0 && (p == 0 || idx[p] > idx[p-1])
	}
	if !ordered && s.Explicit { // an explicit list is kept in the order given: draw it by index
		ordered = true
		order := make([]int, len(keys))
		for j := range order {
			order[j] = j
			ordered = ordered && idx[j] >= 0
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(idx[x], idx[y]) })
		t2, i2 := make([]views.Tile, len(order)), make([]int64, len(order))
		for j, o := range order {
			t2[j], i2[j] = tiles[o], idx[o]
		}
		tiles, idx = t2, i2
	}
	if !ordered { // keys no longer in the asset's space cannot be placed on a calendar
		l = gridLayout{mode: "list"}
	}
	g := l.layTiles(a, idx, tiles)
	g.TileTestID = "outcome-tile"
	return &g, nil
}

// runKey is one partition of one run.
type runKey struct{ run, key string }

// instFold sums up a run's instances of one partition: whether one attempt
// materialized it (the run's checkpoint) and the latest attempt's status.
type instFold struct {
	materialized bool
	last         string
}

// partitionOutcome is what backfill b did to one partition of chunk run r
// (nil: the chunk is not planned yet), from the run's instances of the
// partition and the backfill's failure record of it (reason, "" when none).
func partitionOutcome(b db.Backfill, r *db.Run, in instFold, failure string) string {
	switch {
	case r == nil && (b.State == db.BackfillCanceled || b.State == db.BackfillCanceling):
		return views.OutcomeCanceled // will never be planned
	case r == nil:
		return views.OutcomePending
	case failure == "upstream_failed":
		return views.OutcomeUpstreamFailed
	case in.materialized:
		return views.OutcomeMaterialized
	case r.State == db.RunRunning && in.last == db.StatusInProgress:
		return views.OutcomeRunning
	case r.State == db.RunRunning || r.State == db.RunQueued:
		return views.OutcomeQueued // waiting for a slot, a lease or a retry
	case failure != "" || in.last == db.StatusFailed:
		return views.OutcomeFailed
	case in.last == db.AttemptCanceled || in.last == db.AttemptInterrupted:
		return views.OutcomeCanceled
	}
	switch r.State { // no instance of the partition: the run's outcome is the partition's
	case db.RunSucceeded:
		return views.OutcomeMaterialized
	case db.RunFailed:
		return views.OutcomeFailed
	}
	return views.OutcomeCanceled
}

// chunkTiles draws segment s one tile per chunk, linking to its run.
func (h *Handler) chunkTiles(ctx context.Context, b db.Backfill, s db.Segment) ([]views.Tile, error) {
	lo, hi := s.FirstChunk, s.FirstChunk+s.Chunks-1
	runs, err := h.Store.ChunkRuns(ctx, b.ID, lo, hi)
	if err != nil {
		return nil, err
	}
	tiles := make([]views.Tile, 0, s.Chunks)
	j := 0
	for ch := lo; ch <= hi; ch++ {
		t := views.Tile{Status: "pending", Title: fmt.Sprintf("chunk %d · not planned yet", ch)}
		if b.State == db.BackfillCanceling || b.State == db.BackfillCanceled {
			t = views.Tile{Status: db.RunCanceled, Title: fmt.Sprintf("chunk %d · canceled before it was planned", ch)}
		}
		if j < len(runs) && runs[j].Chunk == ch {
			r := runs[j]
			j++
			t.Status, t.Href = r.State, RunHref(r.ID)
			t.Title = fmt.Sprintf("chunk %d · %s … %s · %s", ch, r.FirstKey, r.LastKey, r.State)
		}
		tiles = append(tiles, t)
	}
	return tiles, nil
}

// chunkStrip draws segment s as about ChunkBuckets buckets of chunks counted
// by run state; size is the chunks per bucket.
func (h *Handler) chunkStrip(ctx context.Context, b db.Backfill, s db.Segment) (strip []views.Bucket, size int64, err error) {
	lo, hi := s.FirstChunk, s.FirstChunk+s.Chunks-1
	size = (s.Chunks + ChunkBuckets - 1) / ChunkBuckets
	counts, err := h.Store.BackfillChunkBuckets(ctx, b.ID, lo, hi, size)
	if err != nil {
		return nil, 0, err
	}
	nb := (s.Chunks + size - 1) / size
	bars := make([]map[string]int64, nb)
	for i := range bars {
		bars[i] = map[string]int64{}
	}
	for _, c := range counts {
		if c.Bucket >= 0 && c.Bucket < nb {
			bars[c.Bucket][c.State] += c.Runs
		}
	}
	for i := range nb {
		from := lo + i*size
		to := min(from+size-1, hi)
		m := bars[i]
		var planned int64
		for _, n := range m {
			planned += n
		}
		bar := views.Bar{Total: to - from + 1, Segs: []views.Seg{
			{Status: db.StatusMaterialized, N: m[db.RunSucceeded]}, {Status: db.StatusFailed, N: m[db.RunFailed]},
			{Status: db.StatusInProgress, N: m[db.RunQueued] + m[db.RunRunning]},
			{Status: "other", N: m[db.RunCanceled]}, {Status: db.StatusMissing, N: max(to-from+1-planned, 0)}}}
		strip = append(strip, views.Bucket{From: strconv.FormatInt(from, 10), To: strconv.FormatInt(to, 10), Bar: bar, Span: 1,
			Href:  BackfillHref(b.ID) + "?after=" + strconv.FormatInt(from-1, 10) + "#bf-chunks",
			Title: fmt.Sprintf("chunks %d–%d: %d succeeded, %d failed, %d running, %d not run", from, to, m[db.RunSucceeded], m[db.RunFailed], m[db.RunQueued]+m[db.RunRunning], bar.Segs[4].N+m[db.RunCanceled])})
	}
	return strip, size, nil
}

// BackfillGridPartial renders the outcome grid alone (bench and htmx).
func (h *Handler) BackfillGridPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	gs, err := h.outcomeGrids(c.Request().Context(), b)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(http.StatusOK)
	for _, g := range gs {
		if err := views.ChunkGridView(g).Render(c.Request().Context(), c.Response().Writer); err != nil {
			return err
		}
	}
	return nil
}
