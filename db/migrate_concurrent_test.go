package db_test

import (
	"sync"
	"testing"

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
