package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
)

// A backfill request's hash (the Idempotency-Key check) is the hash of its
// encoding/json bytes, as before the keys were written straight into the
// hash: a request sent again after an upgrade is still the same request.
func TestRequestHashIsTheHashOfItsJSON(t *testing.T) {
	t.Parallel()
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprintf("2025-01-01-%02d:00", i%24)
	}
	many[17], many[4000] = `<"odd" & \key>`, "é\u2028"
	for _, req := range []Request{
		{Assets: []string{"a"}, Selector: Selector{Type: "explicit", Keys: many}, ChunkSize: 10, Title: `"keys":["\u0000"]`},
		{Assets: []string{"a", "b"}, Selector: Selector{Type: "explicit", Keys: many, Dimensions: map[string][]string{"keys": {"x"}}}, MaxConcurrentRuns: 3},
		{Assets: []string{"a"}, Selector: Selector{Type: "explicit", Keys: many[:10]}},
		{Assets: []string{"a"}, Selector: Selector{Type: "range", Start: "2025-01-01"}},
	} {
		b, _ := json.Marshal(req)
		sum := sha256.Sum256(b)
		if got, want := requestHash(req), hex.EncodeToString(sum[:12]); got != want {
			t.Errorf("requestHash = %s, the hash of its JSON %s (title %q, %d keys)", got, want, req.Title, len(req.Selector.Keys))
		}
	}
}
