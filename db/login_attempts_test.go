package db_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestReserveLoginIsAtomic: 32 goroutines reserving sign-ins of one account
// from one address at once, on a real file or database, get exactly
// Failures reservations; the rest are blocked, until a reservation is
// released.
func TestReserveLoginIsAtomic(t *testing.T) {
	t.Parallel()
	teststore.Each(t, testReserveLoginIsAtomic)
}

func testReserveLoginIsAtomic(t *testing.T, store *db.Store) {
	ctx := t.Context()
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

// TestLoginLockoutOnBothBackends: the third failure of an account locks it
// (one login.locked_out event, on the user's subject whatever the case it
// was typed in), LoginLocks reports the lock, UnlockUser clears it, and a
// success from an address trusts that address.
func TestLoginLockoutOnBothBackends(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		p := db.LoginPolicy{Failures: 3, Window: time.Hour, TrustFor: 24 * time.Hour}
		now := time.UnixMilli(1_750_000_000_000)
		ann, err := store.CreateUser(ctx, "Ann", "viewer", "h", "root", now)
		if err != nil {
			t.Fatal(err)
		}
		var locked []db.LoginLockout
		for i := range 3 {
			addr := fmt.Sprintf("192.0.2.%d", i+1)
			at := now.Add(time.Duration(i) * time.Second)
			id, _, err := store.ReserveLogin(ctx, "ANN", addr, p, at)
			if err != nil {
				t.Fatal(err)
			}
			if locked, err = store.LoginFailed(ctx, id, "ANN", addr, p, at); err != nil {
				t.Fatal(err)
			}
		}
		if len(locked) != 1 || locked[0].Scope != db.LoginScopeAccount || locked[0].Key != "ann" {
			t.Fatalf("third failure locked %+v, want the account ann", locked)
		}
		evs, err := store.EventsBySubject(ctx, "user:Ann", 5)
		if err != nil || len(evs) != 2 || evs[0].Type != "login.locked_out" {
			t.Fatalf("Ann's events: %+v %v", evs, err)
		}
		var be *db.LoginBlockedError
		if _, _, err := store.ReserveLogin(ctx, "ann", "192.0.2.9", p, now.Add(time.Minute)); !errors.As(err, &be) || be.Scope != db.LoginScopeAccount {
			t.Fatalf("a locked account reserved: %v", err)
		}
		locks, err := store.LoginLocks(ctx, p, now.Add(time.Minute))
		if l, ok := locks["ann"]; err != nil || !ok || l.Failures != 3 || l.Addresses != 3 {
			t.Fatalf("locks: %+v %v", locks, err)
		}
		if n, err := store.UnlockUser(ctx, ann.ID, "root", now.Add(time.Minute)); err != nil || n != 3 {
			t.Fatalf("unlock: %d %v, want 3 failures cleared", n, err)
		}
		id, trusted, err := store.ReserveLogin(ctx, "ann", "192.0.2.1", p, now.Add(2*time.Minute))
		if err != nil || trusted {
			t.Fatalf("after unlock: %v trusted=%v", err, trusted)
		}
		if err := store.LoginSucceeded(ctx, id, "ann", "192.0.2.1", now.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, trusted, err := store.ReserveLogin(ctx, "ann", "192.0.2.1", p, now.Add(3*time.Minute)); err != nil || !trusted {
			t.Fatalf("after a success: %v trusted=%v", err, trusted)
		}
	})
}
