package db_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestRecordSessionKeys: the session keys of the instances that count are
// given to accept: those heartbeating within the TTL and those recorded
// within the start window that never heartbeated; not one whose heartbeat
// expired nor one that started long ago and never beat. A refusal writes
// nothing; records of instances gone for over 10 minutes are deleted; a
// clean stop forgets the record. On SQLite nothing is recorded.
func TestRecordSessionKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const minute = 60 * 1000
	if err := teststore.OpenOn(t, db.SQLite).RecordSessionKeys(ctx, db.InstanceSessionKeys{Owner: "a"}, 0, 0, func([]db.InstanceSessionKeys) error { return nil }); !errors.Is(err, db.ErrNotPostgres) {
		t.Fatalf("SQLite: %v, want ErrNotPostgres", err)
	}
	store := teststore.OpenOn(t, db.Postgres)
	base := int64(1_000_000_000)
	// record records owner at now (Unix ms), with a TTL of 5 s and a start
	// window of 2 min, and returns the owners accept was given.
	record := func(owner string, now int64, refuse error) ([]string, error) {
		t.Helper()
		var seen []string
		err := store.RecordSessionKeys(ctx, db.InstanceSessionKeys{Owner: owner, Signing: "s-" + owner, Keys: "s-" + owner + ",k", Since: now}, now-5000, now-2*minute,
			func(live []db.InstanceSessionKeys) error {
				for _, l := range live {
					seen = append(seen, l.Owner)
				}
				return refuse
			})
		return seen, err
	}
	owners := func() []string {
		t.Helper()
		var o []string
		if err := store.RawReader().Select(&o, `SELECT owner FROM instance_session_keys ORDER BY owner`); err != nil {
			t.Fatal(err)
		}
		return o
	}
	if seen, err := record("old", base, nil); err != nil || len(seen) != 0 {
		t.Fatalf("first record: %v %v", seen, err)
	}
	// old started long ago and never heartbeated: it does not count.
	now := base + 3*minute
	if seen, err := record("a", now, nil); err != nil || len(seen) != 0 {
		t.Fatalf("a beside old (never beat, started 3 min ago): saw %v (%v), want none", seen, err)
	}
	// a is starting (no heartbeat yet): it counts for b; b refused writes
	// nothing.
	refused := errors.New("refused")
	if seen, err := record("b", now+1000, refused); !errors.Is(err, refused) || !slices.Equal(seen, []string{"a"}) {
		t.Fatalf("b beside a starting: saw %v, err %v; want [a] and the refusal", seen, err)
	}
	if got := owners(); !slices.Equal(got, []string{"a", "old"}) {
		t.Fatalf("records after b's refusal: %v", got)
	}
	// a heartbeats: it counts while its heartbeat is within the TTL, then
	// not (though recorded within the start window).
	if err := store.Heartbeat(ctx, "a", now+2000); err != nil {
		t.Fatal(err)
	}
	if seen, err := record("b", now+6000, nil); err != nil || !slices.Equal(seen, []string{"a"}) {
		t.Fatalf("b beside a beating 4 s ago: saw %v (%v), want [a]", seen, err)
	}
	if err := store.Heartbeat(ctx, "b", now+6000); err != nil {
		t.Fatal(err)
	}
	if seen, err := record("c", now+8000, nil); err != nil || !slices.Equal(seen, []string{"b"}) {
		t.Fatalf("c beside a beating 6 s ago and b beating 2 s ago: saw %v (%v), want [b]", seen, err)
	}
	// Records of instances gone for over 10 minutes are deleted (c, which
	// never beat, too), not the one recording.
	later := now + 11*minute
	if seen, err := record("d", later, nil); err != nil || len(seen) != 0 {
		t.Fatalf("d 11 min later: saw %v (%v), want none", seen, err)
	}
	if got := owners(); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("records after 11 min: %v, want [d]", got)
	}
	if err := store.ForgetSessionKeys(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got := owners(); len(got) != 0 {
		t.Fatalf("records after d forgot its own: %v", got)
	}

	// Two instances recording at once: the second to take the lock sees
	// the first.
	var wg sync.WaitGroup
	saw := make([][]string, 2)
	errs := make([]error, 2)
	for i, o := range []string{"x", "y"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			saw[i], errs[i] = record(o, later+minute, nil)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || len(saw[0])+len(saw[1]) != 1 {
		t.Fatalf("x and y at once: x saw %v (%v), y saw %v (%v); want exactly one to see the other", saw[0], errs[0], saw[1], errs[1])
	}
}
