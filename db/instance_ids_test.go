package db_test

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// Instance ids are stored and derived again (from attempts, ranges, events):
// the derivation encodes exactly as it always did, upper-case base32 lowered,
// whatever the length or the characters of the partition key.
func TestInstanceIDsEncodeAsBefore(t *testing.T) {
	t.Parallel()
	before := func(runID, asset, partition string) string {
		h1 := sha256.Sum256([]byte(runID + "\x00" + asset))
		h2 := sha256.Sum256([]byte(runID + "\x00" + asset + "\x00" + partition))
		var b [15]byte
		copy(b[:7], h1[:7])
		copy(b[7:], h2[:8])
		return "pi_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	}
	for _, run := range []string{"run_kkxyphqld6k3lslzmf4y2nhw", "run_a#2", ""} {
		for _, asset := range []string{"t.hourly", "ünïcode.asset", ""} {
			for _, key := range []string{"2025-01-01-00:00", "", "a", "ключ/with spaces", strings.Repeat("long-key-", 40)} {
				if got, want := db.InstanceID(run, asset, key), before(run, asset, key); got != want {
					t.Fatalf("InstanceID(%q, %q, %q) = %s, want %s", run, asset, key, got, want)
				}
			}
		}
	}
}
