package auth_test

import (
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
)

// TestSessionKeyChecksCompatibility: two instances are compatible when
// each one's signing key is among the other's keys, which accepts both
// phases of a rotation and refuses keys that share nothing, a new key moved
// first before every instance has it, and an old key dropped while another
// instance still signs with it.
func TestSessionKeyChecksCompatibility(t *testing.T) {
	const old, nw, other = "old-key-0123456789", "new-key-0123456789", "other-key-0123456789"
	cases := []struct {
		name string
		a, b []string
		want bool
	}{
		{"same key", []string{old}, []string{old}, true},
		{"same keys", []string{old, nw}, []string{old, nw}, true},
		{"different keys", []string{old}, []string{other}, false},
		{"rotation phase 1: new key added second", []string{old, nw}, []string{old}, true},
		{"rotation phase 2: new key moved first beside phase 1", []string{nw, old}, []string{old, nw}, true},
		{"new key moved first before every instance has it", []string{nw, old}, []string{old}, false},
		{"old key dropped while another instance signs with it", []string{nw}, []string{old, nw}, false},
		{"rotation done", []string{nw}, []string{nw, old}, true},
		{"shared verifying key only", []string{old, other}, []string{nw, other}, false},
	}
	for _, c := range cases {
		a, b := auth.CheckSessionKeys(c.a), auth.CheckSessionKeys(c.b)
		if got := a.CompatibleWith(b); got != c.want {
			t.Errorf("%s: %v beside %v compatible = %v, want %v", c.name, c.a, c.b, got, c.want)
		}
		if got := b.CompatibleWith(a); got != c.want {
			t.Errorf("%s (other way round): %v beside %v compatible = %v, want %v", c.name, c.b, c.a, got, c.want)
		}
	}
	if (auth.SessionKeyChecks{}).CompatibleWith(auth.SessionKeyChecks{}) {
		t.Error("two instances without keys are compatible")
	}
}

// TestSessionKeyChecksRevealNoKey: a check is the hex HMAC-SHA256 of a
// fixed label, one per key in order, the first being the signing key's;
// it contains no key and differs between keys.
func TestSessionKeyChecksRevealNoKey(t *testing.T) {
	keys := []string{"first-key-0123456789", "second-key-0123456789"}
	c := auth.CheckSessionKeys(keys)
	if len(c.Keys) != 2 || c.Signing != c.Keys[0] || c.Keys[0] == c.Keys[1] {
		t.Fatalf("checks %+v", c)
	}
	for _, h := range c.Keys {
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("check %q is not 32 bytes of hex", h)
		}
		for _, k := range keys {
			if strings.Contains(h, k) {
				t.Errorf("check %q contains key %q", h, k)
			}
		}
	}
	// openssl dgst -sha256 -hmac first-key-0123456789 of the label: the
	// check stays comparable between versions of Tessera.
	if want := "1e22a200eba5d324a17ce6de796a489ced608e49c0a8eecd174a975af7e2dab5"; c.Signing != want {
		t.Errorf("signing check %s, want HMAC-SHA256(key, %q) = %s", c.Signing, "tessera session keys check v1", want)
	}
	if again := auth.CheckSessionKeys(keys[:1]); again.Signing != c.Signing {
		t.Errorf("the check of a key changes: %s, then %s", c.Signing, again.Signing)
	}
}
