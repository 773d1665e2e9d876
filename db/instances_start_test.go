package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// TestInstancesStartingAtOnceMigrateOnce: three instances opening one new
// PostgreSQL database at the same moment (a compose file starting them
// together) all open it: the migrations run once, the others wait for
// them, none fails on a table another just created.
func TestInstancesStartingAtOnceMigrateOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := db.Open(url)
			if err == nil {
				var v int64
				v, err = s.MigrationVersion()
				if err == nil && v < 31 {
					t.Errorf("instance %d: schema version %d", i, v)
				}
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
}

// TestInstancesStartingAtOnceCreateOneFirstAdmin: instances started
// together on a new database each see no account; exactly one creates the
// first admin (and prints its password), the others go on without an
// error.
func TestInstancesStartingAtOnceCreateOneFirstAdmin(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stores := make([]*db.Store, 3)
	for i := range stores {
		s, err := db.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	var wg sync.WaitGroup
	created := make([]bool, len(stores))
	errs := make([]error, len(stores))
	start := make(chan struct{})
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			created[i], errs[i] = s.CreateFirstAdmin(context.Background(), "admin", "hash", time.Now())
		}()
	}
	close(start)
	wg.Wait()
	n := 0
	for i := range stores {
		if errs[i] != nil {
			t.Errorf("instance %d: %v", i, errs[i])
		}
		if created[i] {
			n++
		}
	}
	if users, err := stores[0].CountUsers(context.Background()); n != 1 || err != nil || users != 1 {
		t.Fatalf("%d instances created the first admin, %d users (%v); want 1 and 1", n, users, err)
	}
}
