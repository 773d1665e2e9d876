package jobs

import (
	"context"
	"sort"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// upWait is what a downstream chunk waits for: upstream chunks of its
// backfill still queued or running. PerChunk is true when the wait was found
// through the dependency mappings (other downstream chunks may be ready);
// false when the chunk waits for whole upstream segments.
type upWait struct {
	Wait        bool
	PerChunk    bool
	Asset       string // the upstream asset waited for
	First, Last int64  // its chunks (backfill chunk numbers) in that range
}

// upstreamPending reports whether chunk (of segment seg, asset) of backfill b
// must wait for upstream chunks of the backfill: those holding a partition
// that a partition of the chunk reads, found through the dependency
// mappings, that are still queued or running (or in planned, chunks planned
// in this round and not in the runs table yet). Where partitions cannot be
// mapped to chunks (an explicit upstream list, an upstream selected only
// transitively), the chunk waits for every upstream segment to finish.
func (e *Engine) upstreamPending(ctx context.Context, q db.Querier, ws *catalog.Workspace, b *db.Backfill, segs []db.Segment, planned []db.Run, seg *db.Segment, asset *catalog.Asset, chunk int64) (upWait, error) {
	ups := upstreamSegs(ws, asset, segs)
	if len(ups) == 0 {
		return upWait{}, nil
	}
	direct := map[string]bool{}
	for _, d := range asset.Deps {
		direct[d.Asset] = true
	}
	segAt := func(pos int64) *db.Segment {
		for i := range segs {
			if segs[i].Pos == pos {
				return &segs[i]
			}
		}
		return nil
	}
	mapped := true
	for _, pos := range ups {
		s := segAt(pos)
		mapped = mapped && s != nil && direct[s.Asset] && !s.Explicit
	}
	pendingIn := func(lo, hi int64) (bool, error) {
		for _, r := range planned {
			if r.BackfillID == b.ID && r.Chunk >= lo && r.Chunk <= hi {
				return true, nil
			}
		}
		return db.UnfinishedRunsIn(ctx, q, b.ID, lo, hi)
	}
	if !mapped {
		for _, pos := range ups {
			up := segAt(pos)
			if up == nil {
				return upWait{Wait: true}, nil
			}
			first, last := up.FirstChunk, up.FirstChunk+up.Chunks-1
			if wait, err := pendingIn(first, last); err != nil || wait {
				return upWait{Wait: wait, Asset: up.Asset, First: first, Last: last}, err
			}
		}
		return upWait{}, nil
	}
	keys, _, err := e.chunkKeys(ctx, q, b, seg, chunk)
	if err != nil {
		return upWait{}, err
	}
	downSp, err := e.space(ctx, asset.Key)
	if err != nil {
		return upWait{}, err
	}
	for _, d := range asset.Deps {
		for _, pos := range ups {
			up := segAt(pos)
			upAsset := ws.Asset(up.Asset)
			if up.Asset != d.Asset || upAsset == nil {
				continue
			}
			upSp, err := e.space(ctx, up.Asset)
			if err != nil {
				return upWait{}, err
			}
			rs, err := e.segmentRanges(ctx, q, b.ID, up.Pos, 0, up.Partitions)
			if err != nil {
				return upWait{}, err
			}
			// The upstream chunks holding the partitions the chunk reads.
			first, last := int64(-1), int64(-1)
			for _, k := range keys {
				irs, err := catalog.UpstreamOf(d, asset.Scheme, downSp, upAsset.Scheme, upSp, k)
				if err != nil {
					continue
				}
				for _, ir := range irs {
					// rs is in index order: from the first range ending at or after ir.Lo.
					for j := sort.Search(len(rs), func(j int) bool { return rs[j].Hi >= ir.Lo }); j < len(rs) && rs[j].Lo <= ir.Hi; j++ {
						r := rs[j]
						lo, hi := max(ir.Lo, r.Lo), min(ir.Hi, r.Hi)
						c0 := up.FirstChunk + (r.Start+lo-r.Lo)/up.Size(b.ChunkSize)
						c1 := up.FirstChunk + (r.Start+hi-r.Lo)/up.Size(b.ChunkSize)
						if first < 0 || c0 < first {
							first = c0
						}
						last = max(last, c1)
					}
				}
			}
			if first < 0 {
				continue
			}
			if wait, err := pendingIn(first, last); err != nil || wait {
				return upWait{Wait: wait, PerChunk: true, Asset: up.Asset, First: first, Last: last}, err
			}
		}
	}
	return upWait{}, nil
}

// upstreamSegs returns the positions of the segments whose asset is a
// (transitive) upstream of asset.
func upstreamSegs(ws *catalog.Workspace, asset *catalog.Asset, segs []db.Segment) []int64 {
	ups := map[string]bool{}
	var walk func(a *catalog.Asset)
	walk = func(a *catalog.Asset) {
		for _, d := range a.Deps {
			if !ups[d.Asset] {
				ups[d.Asset] = true
				if u := ws.Asset(d.Asset); u != nil {
					walk(u)
				}
			}
		}
	}
	walk(asset)
	var out []int64
	for _, s := range segs {
		if ups[s.Asset] {
			out = append(out, s.Pos)
		}
	}
	return out
}
