package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// chunkKeys returns chunk i's partition keys and indexes (computed from the
// segment's ranges or explicit keys, never from the whole selection).
func (e *Engine) chunkKeys(ctx context.Context, tx db.Querier, b *db.Backfill, seg *db.Segment, chunk int64) ([]string, []int64, error) {
	return e.chunkKeysUpTo(ctx, tx, b, seg, chunk, seg.Size(b.ChunkSize))
}

// chunkKeysUpTo is chunkKeys for the first limit partitions of the chunk.
func (e *Engine) chunkKeysUpTo(ctx context.Context, tx db.Querier, b *db.Backfill, seg *db.Segment, chunk, limit int64) ([]string, []int64, error) {
	size := seg.Size(b.ChunkSize)
	p0 := (chunk - seg.FirstChunk) * size
	p1 := min(p0+size, seg.Partitions, p0+limit)
	sp, err := e.space(ctx, seg.Asset)
	if err != nil {
		return nil, nil, err
	}
	if seg.Explicit {
		keys, err := e.explicitKeys(ctx, tx, b.ID, p0, p1)
		if err != nil {
			return nil, nil, err
		}
		idx := make([]int64, len(keys))
		for i, k := range keys {
			if idx[i], err = sp.Index(k); err != nil {
				idx[i] = -1
			}
		}
		return keys, idx, nil
	}
	rs, err := e.segmentRanges(ctx, tx, b.ID, seg.Pos, p0, p1)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, p1-p0)
	idx := make([]int64, 0, p1-p0)
	for _, r := range rs {
		from := max(p0, r.Start)
		to := min(p1, r.Start+r.Hi-r.Lo+1)
		if from >= to {
			continue
		}
		lo := r.Lo + from - r.Start
		ks := sp.Keys(lo, to-from)
		for j, k := range ks {
			keys = append(keys, k)
			idx = append(idx, lo+int64(j))
		}
	}
	return keys, idx, nil
}

// space returns an asset's current partition space (cached briefly, and
// until the workspace is reloaded).
func (e *Engine) space(ctx context.Context, asset string) (catalog.Space, error) {
	e.spaceMu.Lock()
	defer e.spaceMu.Unlock()
	ws, _ := e.workspace()
	if e.spaces == nil || e.spacesWS != ws || time.Since(e.spacesAt) > 2*time.Second {
		dyn, err := e.Store.LoadDynamicKeys(ctx)
		if err != nil {
			return nil, err
		}
		now := e.Now()
		e.spaces = map[string]catalog.Space{}
		for _, a := range ws.Assets {
			e.spaces[a.Key] = a.Scheme.Space(now, dyn)
		}
		e.spacesAt, e.spacesWS = time.Now(), ws
	}
	sp, ok := e.spaces[asset]
	if !ok {
		return nil, fmt.Errorf("asset %s is no longer declared", asset)
	}
	return sp, nil
}

// indexSpan is the lowest and the highest of a chunk's partition indexes
// idx (chunkKeys), a negative one left out: -1 and -1 when every one is
// negative, or there is none.
func indexSpan(idx []int64) (lo, hi int64) {
	lo, hi = -1, -1
	for _, i := range idx {
		if i >= 0 && (lo < 0 || i < lo) {
			lo = i
		}
		hi = max(hi, i)
	}
	return lo, hi
}
