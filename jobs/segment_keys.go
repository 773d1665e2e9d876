package jobs

import (
	"context"

	"github.com/tessera-dev/tessera/db"
)

// SegmentKeys returns every partition key of a backfill segment with its
// asset index (-1 when an explicit key is no longer in the asset's space), in
// selection order: position p of the segment is keys[p] and belongs to chunk
// seg.FirstChunk + p/seg.Size(b.ChunkSize). It is chunkKeys with the whole segment read
// as one chunk, so that it resolves ranges and explicit keys exactly as the
// controller plans them. Its cost is O(seg.Partitions): callers bound it (the
// backfill page draws a segment tile by tile only up to about 1,000).
func (e *Engine) SegmentKeys(ctx context.Context, b db.Backfill, seg db.Segment) ([]string, []int64, error) {
	if seg.Partitions <= 0 {
		return nil, nil, nil
	}
	whole := seg
	whole.ChunkSize = seg.Partitions // the segment read as one chunk
	return e.chunkKeys(ctx, e.Store.Reader(), &b, &whole, seg.FirstChunk)
}

// ChunkFirstKey is the first partition key of chunk of backfill b, planned
// or not ("" when the backfill has no such chunk).
func (e *Engine) ChunkFirstKey(ctx context.Context, b db.Backfill, chunk int64) (string, error) {
	segs, err := db.Segments(ctx, e.Store.Reader(), b.ID)
	if err != nil {
		return "", err
	}
	seg := segmentOf(segs, chunk)
	if seg == nil {
		return "", nil
	}
	keys, _, err := e.chunkKeysUpTo(ctx, e.Store.Reader(), &b, seg, chunk, 1)
	if err != nil || len(keys) == 0 {
		return "", err
	}
	return keys[0], nil
}
