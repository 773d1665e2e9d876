package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Instances sharing a database must read each other's session cookies: a
// cookie is signed with an instance's first session key and read with any
// of its keys. Each instance publishes, for each of its keys, a check (an
// HMAC of a fixed label under the key) so that two instances compare their
// keys without either revealing one.

// sessionKeysLabel is what each session key signs to make its check.
const sessionKeysLabel = "tessera session keys check v1"

// SessionKeyChecks are the checks of an instance's session keys: the
// hex HMAC-SHA256 of a fixed label under each key.
type SessionKeyChecks struct {
	// Signing is the check of the signing (first) key.
	Signing string
	// Keys are the checks of every key, in order (the first is Signing).
	Keys []string
}

// CheckSessionKeys returns the checks of keys (the first signs).
func CheckSessionKeys(keys []string) SessionKeyChecks {
	var c SessionKeyChecks
	for _, k := range keys {
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(sessionKeysLabel))
		c.Keys = append(c.Keys, hex.EncodeToString(m.Sum(nil)))
	}
	if len(c.Keys) > 0 {
		c.Signing = c.Keys[0]
	}
	return c
}

// Reads says whether the instance of c reads the cookies the instance of
// other signs: other's signing key is among c's keys.
func (c SessionKeyChecks) Reads(other SessionKeyChecks) bool {
	return other.Signing != "" && slices.Contains(c.Keys, other.Signing)
}

// CompatibleWith says whether two instances read each other's cookies:
// each one's signing key is among the other's keys. Keys rotate safely in
// two phases: first the new key is added after the current one on every
// instance ([old,new] beside [old] is compatible), then it is moved first
// ([new,old] beside [old,new]).
func (c SessionKeyChecks) CompatibleWith(other SessionKeyChecks) bool {
	return c.Reads(other) && other.Reads(c)
}
