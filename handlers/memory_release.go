package handlers

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
)

// A request with a big body (a backfill of a million explicit keys, 20 MB)
// leaves a heap of its size behind, which the Go runtime hands back to the
// system only slowly (minutes later on a server at rest), and fills the
// database writer's page cache with the pages it wrote. Once such a
// request is answered, the server collects its garbage, gives the memory
// back and empties the writer's cache.

// bigBody is the body size from which releaseMemory collects.
const bigBody = 4 << 20

var (
	releaseOnce sync.Once
	releases    chan struct{}
)

// releaseMemory asks, for a request whose body was n bytes, that the heap
// be collected and its free memory given back to the system, in the
// background. Requests that end while a release runs share the next one.
func (h *Handler) releaseMemory(n int) {
	if n < bigBody {
		return
	}
	store := h.Store
	releaseOnce.Do(func() {
		releases = make(chan struct{}, 1)
		go func() {
			for range releases {
				_ = store.ReleaseMemory(context.Background())
				// The first collection moves what sync.Pools hold (the
				// JSON encoders' buffers of the answer and the event) to
				// their victim caches, the second frees it.
				runtime.GC()
				debug.FreeOSMemory()
			}
		}()
	})
	select {
	case releases <- struct{}{}:
	default: // one is pending already
	}
}
