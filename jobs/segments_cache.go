package jobs

import (
	"context"
	"slices"
	"sync"

	"github.com/tessera-dev/tessera/db"
)

// segmentCache keeps the segments of the backfills the controller plans and
// finishes: a backfill's segments are written once, when it is created,
// and never change, so the controller reads them once instead of in every
// step (two queries a step, a sixth of the controller's time with single-
// partition chunks).
type segmentCache struct {
	mu sync.Mutex
	m  map[string][]db.Segment
}

// maxCachedSegments bounds the cache: past it, it starts again empty.
const maxCachedSegments = 1024

// segments returns backfill id's segments, from the cache or read with q;
// the caller gets its own copy.
func (e *Engine) segments(ctx context.Context, q db.Querier, id string) ([]db.Segment, error) {
	c := &e.segCache
	c.mu.Lock()
	segs, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		var err error
		if segs, err = db.Segments(ctx, q, id); err != nil {
			return nil, err
		}
		if len(segs) == 0 {
			return segs, nil // not committed yet, or gone: ask again next time
		}
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxCachedSegments {
			c.m = map[string][]db.Segment{}
		}
		c.m[id] = segs
		c.mu.Unlock()
	}
	return slices.Clone(segs), nil
}
