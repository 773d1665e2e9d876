package jobs

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// TestRunIDsInPlanningOrder: a chunk's run id is derived from its backfill
// and chunk alone (the same on every instance with the secret), sorts in
// planning order (chunks of a backfill by number, backfills by creation),
// differs for two backfills created in the same millisecond, and depends
// on the secret.
func TestRunIDsInPlanningOrder(t *testing.T) {
	e := &Engine{secret: []byte("0123456789abcdef0123456789abcdef")}
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	bf := func(at time.Time, entropy byte) string {
		u, err := ulid.New(ulid.Timestamp(at), strings.NewReader(strings.Repeat(string(rune('a'+entropy)), 10)))
		if err != nil {
			t.Fatal(err)
		}
		return "bf_" + strings.ToLower(u.String())
	}
	shape := regexp.MustCompile(`^run_[0-9a-v]{24}$`)
	var ids []string
	for _, b := range []string{bf(at, 0), bf(at.Add(time.Millisecond), 0), bf(at.Add(time.Hour), 0)} {
		for _, chunk := range []int64{0, 1, 2, 9, 10, 11, 99, 100, 1 << 20, 1<<35 - 1} {
			id := e.RunID(b, chunk)
			if !shape.MatchString(id) {
				t.Fatalf("RunID(%s, %d) = %q, want run_ and 24 base32hex characters", b, chunk, id)
			}
			if again := e.RunID(b, chunk); again != id {
				t.Fatalf("RunID(%s, %d) = %q, then %q", b, chunk, id, again)
			}
			ids = append(ids, id)
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatalf("run ids not in planning order: %q", ids)
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("two runs share an id: %q", ids)
	}
	// Two backfills of the same millisecond: different ids for every chunk.
	a, b := bf(at, 1), bf(at, 2)
	for chunk := int64(0); chunk < 1000; chunk++ {
		if e.RunID(a, chunk) == e.RunID(b, chunk) {
			t.Fatalf("chunk %d of %s and %s: the same run id %s", chunk, a, b, e.RunID(a, chunk))
		}
	}
	other := &Engine{secret: []byte("another secret of thirty-two byt")}
	if other.RunID(a, 0) == e.RunID(a, 0) {
		t.Fatal("the run id does not depend on the server's secret")
	}
	// A backfill id that is not a ULID, or a chunk out of range, keeps the
	// older id (an HMAC of the run key), still the same each time.
	for _, c := range []struct {
		b     string
		chunk int64
	}{{"seeded-backfill", 3}, {"bf_notaulid", 3}, {a, 1 << 35}, {a, -1}} {
		id := e.RunID(c.b, c.chunk)
		if !regexp.MustCompile(`^run_[a-z2-7]{24}$`).MatchString(id) || id != e.RunID(c.b, c.chunk) {
			t.Errorf("RunID(%q, %d) = %q, want the older id, the same each time", c.b, c.chunk, id)
		}
	}
}
