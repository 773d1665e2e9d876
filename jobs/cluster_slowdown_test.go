package jobs

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// A remote service's slow-down holds its pool on every instance, not only
// on the one whose run was told: a pool of one run at a time over three
// instances calls a service that answers its first call 429 with
// Retry-After: 2; the next call, whichever instance makes it, comes 2 s
// later at the earliest (before, the other instances called again as soon
// as the pool's run ended). Every partition is then built.
func TestClusterSlowDownHoldsEveryInstance(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, time.Now())
		first := len(calls) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ws := fmt.Sprintf(`pools:
  remote: {max_concurrent_runs: 1}
assets:
  a.remote:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-05}}
    pool: remote
    retries: {max_attempts: 3, backoff: 1s}
    executor: {http: {url: %q, timeout: 5s}}
`, srv.URL)
	c := newClusterEnv(t, 3, ws, func(int) Options { return Options{MaxConcurrentRuns: 2} })
	for i := range 3 {
		c.start(i, false)
	}
	b := c.create(Request{Assets: []string{"a.remote"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 4})
	if got := c.wait(1, b.ID, 60*time.Second, db.BackfillSucceeded, db.BackfillFailed); got.State != db.BackfillSucceeded || got.PartitionsMaterialized != 4 {
		t.Fatalf("backfill %s with %d partitions materialized, want succeeded with 4", got.State, got.PartitionsMaterialized)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 5 {
		t.Fatalf("%d calls, want 5 (4 partitions, one answered 429)", len(calls))
	}
	for i := range calls {
		t.Logf("call %d at +%v", i, calls[i].Sub(calls[0]))
	}
	if d := calls[1].Sub(calls[0]); d < 2*time.Second {
		t.Fatalf("the second call came %v after the one answered Retry-After: 2", d)
	}
}
