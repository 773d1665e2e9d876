package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// MinPasswordLength is the shortest accepted password, in characters.
const MinPasswordLength = 10

// MaxPasswordLength bounds the work one login can cause.
const MaxPasswordLength = 256

// argon2id parameters (OWASP: m=19 MiB, t=2, p=1).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// CheckPasswordPolicy reports why a password is not acceptable.
func CheckPasswordPolicy(pw string) error {
	n := utf8.RuneCountInString(pw)
	switch {
	case pw == "":
		return errors.New("the password is empty")
	case n < MinPasswordLength:
		return fmt.Errorf("the password is too short: use at least %d characters", MinPasswordLength)
	case len(pw) > MaxPasswordLength:
		return fmt.Errorf("the password is too long: use at most %d bytes", MaxPasswordLength)
	case strings.TrimSpace(pw) == "":
		return errors.New("the password is only spaces: use letters, digits or symbols too")
	case distinctRunes(pw) < 3:
		return errors.New("the password repeats one or two characters: use more different characters")
	}
	return nil
}

func distinctRunes(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// HashPassword returns an encoded argon2id hash with a random salt.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// CheckPassword compares pw with an encoded hash in constant time.
func CheckPassword(encoded, pw string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || len(pw) > MaxPasswordLength {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 10 || p == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when a user does not exist, so that unknown
// and known names take the same time.
var dummyHash, _ = HashPassword("tessera-dummy-password")

// BurnPasswordCheck spends the time of one password check.
func BurnPasswordCheck(pw string) { CheckPassword(dummyHash, pw) }

// TokenPrefix starts every API token, so that leaked tokens are easy to spot.
const TokenPrefix = "tsr_"

// NewToken returns a new token secret ("tsr_" + 43 base64url characters), the
// short prefix shown in lists, and the hash to store.
func NewToken() (secret, display, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", "", err
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, secret[:len(TokenPrefix)+6], HashSecret(secret), nil
}

// HashSecret is the stored form of a token or session secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// WellFormedToken reports whether s looks like a token Tessera issued.
func WellFormedToken(s string) bool {
	if !strings.HasPrefix(s, TokenPrefix) || len(s) != len(TokenPrefix)+43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s[len(TokenPrefix):])
	return err == nil
}

// RandomString returns n random bytes as base64url (for passwords and session
// secrets).
func RandomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
