package handlers

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests of the same key within the ttl share one computation (those
// arriving while it runs wait for it); a new key, an expired value or a
// failed computation is computed again.
func TestRecentMemoShares(t *testing.T) {
	ctx := t.Context()
	r := recentMemo[string, int]{ttl: time.Hour}
	var calls atomic.Int32
	release := make(chan struct{})
	slow := func() (int, error) { calls.Add(1); <-release; return 7, nil }
	var wg sync.WaitGroup
	got := make([]int, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := r.get(ctx, "a", slow)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	// Let every request reach the memo before the computation ends.
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("16 concurrent requests computed %d times, want once", n)
	}
	for i, v := range got {
		if v != 7 {
			t.Fatalf("request %d got %d", i, v)
		}
	}
	count := func() (int, error) { return int(calls.Add(1)), nil }
	if v, _ := r.get(ctx, "a", count); v != 7 {
		t.Fatalf("a within the ttl: %d, want the shared 7", v)
	}
	if v, _ := r.get(ctx, "b", count); v != 2 {
		t.Fatalf("a new key not computed: %d", v)
	}
	r.ttl = 0 // every value expired
	if v, _ := r.get(ctx, "a", count); v != 3 {
		t.Fatalf("an expired value not computed again: %d", v)
	}
	r.ttl = time.Hour
	boom := errors.New("boom")
	if _, err := r.get(ctx, "c", func() (int, error) { return 0, boom }); err != boom {
		t.Fatalf("error %v", err)
	}
	if v, err := r.get(ctx, "c", count); err != nil || v != 4 {
		t.Fatalf("after a failure: %d, %v; want it computed again", v, err)
	}
}
