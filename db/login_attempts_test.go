package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestReserveLoginIsAtomic: 32 goroutines reserving sign-ins of one account
// from one address at once, on a real file, get exactly Failures
// reservations; the rest are blocked, until a reservation is released.
func TestReserveLoginIsAtomic(t *testing.T) {
	t.Parallel()
	store := teststore.Open(t)
	ctx := context.Background()
	p := db.LoginPolicy{Failures: 5, Window: time.Minute, TrustFor: time.Hour}
	now := time.Now()
	var mu sync.Mutex
	var ids []int64
	blocked := 0
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _, err := store.ReserveLogin(ctx, "Ann", "192.0.2.1", p, now)
			var be *db.LoginBlockedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ids = append(ids, id)
			case errors.As(err, &be) && be.Scope == db.LoginScopeAddress && be.Until.Equal(db.FromMillis(db.Millis(now)).Add(time.Minute)):
				blocked++
			default:
				t.Errorf("reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(ids) != 5 || blocked != 27 {
		t.Fatalf("32 reservations at once: %d made, %d blocked; want 5 and 27", len(ids), blocked)
	}
	if err := store.ReleaseLogin(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.ReserveLogin(ctx, "ann", "192.0.2.1", p, now); err != nil {
		t.Fatalf("a released reservation still counts: %v", err)
	}
	// Aged out: a minute later the address is open again.
	if _, _, err := store.ReserveLogin(ctx, "ann", "192.0.2.1", p, now.Add(time.Minute+time.Millisecond)); err != nil {
		t.Fatalf("failures older than the window still count: %v", err)
	}
}
