package db_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestLeaderLease: the lease goes to the first owner that asks, is renewed
// by it, refused to another until it expires, then taken by the other;
// given up, it goes to the next that asks at once.
func TestLeaderLease(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := context.Background()
		lead := func(owner string, now int64) bool {
			t.Helper()
			ok, err := store.LeadFor(ctx, "automation", owner, now, now+1000)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !lead("a", 0) {
			t.Fatal("a fresh lease refused")
		}
		if lead("b", 500) {
			t.Fatal("b took a's lease before it expired")
		}
		if !lead("a", 900) {
			t.Fatal("a could not renew its lease")
		}
		if lead("b", 1800) {
			t.Fatal("b took a's renewed lease before it expired (1900)")
		}
		if !lead("b", 1901) {
			t.Fatal("b could not take the expired lease")
		}
		if owner, exp, err := store.LeaderOf(ctx, "automation"); err != nil || owner != "b" || exp != 2901 {
			t.Fatalf("leader %q until %d (%v), want b until 2901", owner, exp, err)
		}
		if lead("a", 2000) {
			t.Fatal("a took b's lease back before it expired")
		}
		if err := store.StepDown(ctx, "automation", "a"); err != nil {
			t.Fatal(err)
		}
		if owner, _, _ := store.LeaderOf(ctx, "automation"); owner != "b" {
			t.Fatalf("a gave up b's lease: the leader is %q", owner)
		}
		if err := store.StepDown(ctx, "automation", "b"); err != nil {
			t.Fatal(err)
		}
		if !lead("a", 2001) {
			t.Fatal("a could not take the lease b gave up")
		}
	})
}

// TestLockStepsSerializesAcrossStores: on PostgreSQL, a transaction that
// takes the step lock waits until another store's transaction holding it
// ends.
func TestLockStepsSerializesAcrossStores(t *testing.T) {
	t.Parallel()
	a, b := twoStoresOnOneDatabase(t)
	ctx := context.Background()
	release := make(chan struct{})
	var released atomic.Bool
	errc := make(chan error, 1)
	holdStepLock(ctx, a, release, errc, func() { released.Store(true) })
	go func() {
		time.Sleep(300 * time.Millisecond) // the other waits meanwhile
		close(release)
	}()
	err := b.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.LockSteps(ctx, tx); err != nil {
			return err
		}
		if !released.Load() {
			t.Error("two stores held the step lock at once")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestHeartbeatNotBehindAWaitingStep: on PostgreSQL, while a store's step
// transaction waits for another instance's step (holding the store's one
// writer connection), its heartbeat and leader lease still write at once.
func TestHeartbeatNotBehindAWaitingStep(t *testing.T) {
	t.Parallel()
	a, b := twoStoresOnOneDatabase(t)
	ctx := context.Background()
	release := make(chan struct{})
	errc := make(chan error, 2)
	holdStepLock(ctx, a, release, errc, func() {})
	waiting := make(chan struct{})
	go func() {
		errc <- b.Tx(ctx, func(tx *sqlx.Tx) error {
			close(waiting)
			return db.LockSteps(ctx, tx) // waits for a's step
		})
	}()
	<-waiting
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.Heartbeat(hctx, "w_b", 1); err != nil {
		t.Errorf("heartbeat while the step waits: %v", err)
	}
	if _, err := b.LeadFor(hctx, "automation", "w_b", 1, 2); err != nil {
		t.Errorf("leader lease while the step waits: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// twoStoresOnOneDatabase opens two stores, as two instances would, on one
// fresh PostgreSQL database.
func twoStoresOnOneDatabase(t *testing.T) (a, b *db.Store) {
	t.Helper()
	url := pgtest.URL(t)
	return teststore.OpenAt(t, url), teststore.OpenAt(t, url)
}

// holdStepLock takes the step lock in a transaction of store s and returns
// once it holds it; the transaction ends when release is closed, calling
// released first, and sends its error on errc.
func holdStepLock(ctx context.Context, s *db.Store, release <-chan struct{}, errc chan<- error, released func()) {
	held := make(chan struct{})
	go func() {
		errc <- s.Tx(ctx, func(tx *sqlx.Tx) error {
			if err := db.LockSteps(ctx, tx); err != nil {
				return err
			}
			close(held)
			<-release
			released()
			return nil
		})
	}()
	<-held
}
