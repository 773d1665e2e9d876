package jobs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/tessera-dev/tessera/db"
)

// segmentCache keeps the segments and the selection ranges of the
// backfills the controller plans and finishes: both are written once, when
// a backfill is created, and never change, so the controller reads them
// once instead of in every step.
//
// The caches evict the least recently used entry. They used to start again
// empty past 1,024 entries; with more backfills active than that (a burst
// of schedule ticks or pushed events queued on one partition's lease),
// every step read every backfill's segments again and held the writer for
// seconds. maxCachedSegments covers far more active backfills than the
// controller plans at once, at a few hundred bytes an entry.
type segmentCache struct {
	once   sync.Once
	segs   *lru.Cache[string, []db.Segment]
	ranges *lru.Cache[string, []db.SelRange] // by "backfill/pos"
	// keys holds blocks of explicit keys (db.KeyBlock each) by
	// "backfill/block": chunks smaller than a block read it once.
	keys *lru.Cache[string, []string]
}

// maxCachedKeyBlocks bounds the key blocks cached (256 Ki keys).
const maxCachedKeyBlocks = 256

// maxCachedSegments bounds each cache.
const maxCachedSegments = 1 << 16

func (c *segmentCache) init() {
	c.once.Do(func() {
		c.segs, _ = lru.New[string, []db.Segment](maxCachedSegments)
		c.ranges, _ = lru.New[string, []db.SelRange](maxCachedSegments)
		c.keys, _ = lru.New[string, []string](maxCachedKeyBlocks)
	})
}

// segments returns backfill id's segments, from the cache or read with q;
// the caller gets its own copy.
func (e *Engine) segments(ctx context.Context, q db.Querier, id string) ([]db.Segment, error) {
	c := &e.segCache
	c.init()
	if segs, ok := c.segs.Get(id); ok {
		return slices.Clone(segs), nil
	}
	segs, err := db.Segments(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return segs, nil // not committed yet, or gone: ask again next time
	}
	c.segs.Add(id, segs)
	return slices.Clone(segs), nil
}

// segmentRanges returns the ranges of a segment overlapping selection
// positions [p0, p1), from the cache or read with q.
func (e *Engine) segmentRanges(ctx context.Context, q db.Querier, backfillID string, pos, p0, p1 int64) ([]db.SelRange, error) {
	c := &e.segCache
	c.init()
	key := fmt.Sprintf("%s/%d", backfillID, pos)
	all, ok := c.ranges.Get(key)
	if !ok {
		var err error
		if all, err = db.AllSegmentRanges(ctx, q, backfillID, pos); err != nil {
			return nil, err
		}
		c.ranges.Add(key, all)
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].Start > p0 }) - 1
	i = max(i, 0)
	var out []db.SelRange
	for ; i < len(all) && all[i].Start < p1; i++ {
		out = append(out, all[i])
	}
	return out, nil
}

// explicitKeys returns backfill backfillID's explicit keys n in [p0, p1),
// its key blocks from the cache or read with q.
func (e *Engine) explicitKeys(ctx context.Context, q db.Querier, backfillID string, p0, p1 int64) ([]string, error) {
	if p1 <= p0 {
		return nil, nil
	}
	c := &e.segCache
	c.init()
	b0, b1 := p0/db.KeyBlock, (p1-1)/db.KeyBlock
	blocks := make(map[int64][]string, b1-b0+1)
	lo, hi := int64(-1), int64(-1) // the blocks not cached
	for b := b0; b <= b1; b++ {
		if keys, ok := c.keys.Get(fmt.Sprintf("%s/%d", backfillID, b)); ok {
			blocks[b] = keys
			continue
		}
		if lo < 0 {
			lo = b
		}
		hi = b
	}
	if lo >= 0 {
		read, err := db.KeyBlocks(ctx, q, backfillID, lo, hi)
		if err != nil {
			return nil, err
		}
		for b, keys := range read {
			blocks[b] = keys
			c.keys.Add(fmt.Sprintf("%s/%d", backfillID, b), keys)
		}
	}
	return db.KeysIn(blocks, p0, p1), nil
}
