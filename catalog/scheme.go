package catalog

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind is the kind of a partition scheme.
type Kind string

// Partition scheme kinds.
const (
	KindHourly  Kind = "hourly"
	KindDaily   Kind = "daily"
	KindWeekly  Kind = "weekly"
	KindMonthly Kind = "monthly"
	KindStatic  Kind = "static"
	KindDynamic Kind = "dynamic"
	KindMulti   Kind = "multi"
)

// IsTime reports whether k is one of the time-window kinds.
func (k Kind) IsTime() bool {
	switch k {
	case KindHourly, KindDaily, KindWeekly, KindMonthly:
		return true
	}
	return false
}

// MultiSep separates the parts of a multi-dimensional partition key.
const MultiSep = "|"

// MaxKeyLen is the maximum length of a static or dynamic partition key.
const MaxKeyLen = 200

// Scheme is a partition scheme as declared in the workspace.
type Scheme interface {
	Kind() Kind
	// Describe returns a short human description, e.g. "daily since 2025-01-01 UTC".
	Describe() string
	// Space returns the finite ordered key space at time now. Open-ended
	// time schemes include every complete window ending <= now, plus
	// EndOffset more windows; an End bound caps it. dyn supplies dynamic
	// partition keys by dynamic-set name; it may be nil when the scheme has
	// no dynamic part.
	Space(now time.Time, dyn DynamicKeys) Space
	// ValidateKey checks syntax/membership without needing now.
	ValidateKey(key string) error
}

// DynamicKeys supplies the keys of dynamic partition sets, in insertion order.
type DynamicKeys interface {
	DynamicKeys(set string) []string
}

// DynamicKeysMap is a DynamicKeys backed by a map (handy for tests and callers
// that load every set at once).
type DynamicKeysMap map[string][]string

// DynamicKeys implements DynamicKeys.
func (m DynamicKeysMap) DynamicKeys(set string) []string { return m[set] }

// Space is an ordered finite set of keys. Len, Key and Index are O(1)
// (O(1) map lookups for static and dynamic keys); Keys is O(limit).
type Space interface {
	Len() int64
	// Key returns the key at index i, or "" when i is outside [0, Len).
	Key(i int64) string
	// Index returns the index of key, or a *KeyError if it is not in the space.
	Index(key string) (int64, error)
	// Keys returns up to limit keys starting at offset (clamped to the space).
	Keys(offset, limit int64) []string
}

// TimeScheme is implemented by hourly/daily/weekly/monthly schemes.
type TimeScheme interface {
	Scheme
	Unit() Kind
	Location() *time.Location
	// WindowStart returns the start instant of window i (i may be any int64 >= 0).
	WindowStart(i int64) time.Time
	// IndexAt returns the index of the window containing t (may be <0 or beyond Len).
	IndexAt(t time.Time) int64
	// KeyFormat returns the Go layout used for keys.
	KeyFormat() string
	// StrftimeFormat returns the key format as declared (strftime directives).
	StrftimeFormat() string
	// WindowIndex returns the window index of a valid key (independent of now);
	// for a key in a Space, it equals Space.Index.
	WindowIndex(key string) (int64, error)
	// Start returns the start of window 0; End returns the exclusive end bound
	// (zero when open-ended); EndOffset the number of extra windows past now.
	Start() time.Time
	End() time.Time
	EndOffset() int64
}

// Dimension is one named dimension of a multi-dimensional scheme.
type Dimension struct {
	Name   string
	Scheme Scheme
}

// MultiScheme is a multi-dimensional scheme. Dimensions are in declared
// order; key = parts joined by "|". Index order is lexicographic over the
// dimensions in declared order (first dimension major). A time dimension, if
// any, is always the first one (so a range of time windows is contiguous).
type MultiScheme interface {
	Scheme
	Dimensions() []Dimension
	// TimeDim returns the index of the (single) time dimension, or -1.
	TimeDim() int
	// Split splits a key into its parts (one per dimension), validating each.
	Split(key string) ([]string, error)
	// Join joins parts into a key (no validation).
	Join(parts []string) string
	// MatchDims reports whether key matches every dimension filter in dims
	// (dimension name -> allowed values; an empty list allows any value).
	// An unknown dimension name or an invalid key never matches.
	MatchDims(key string, dims map[string][]string) bool
}

// DynamicScheme is implemented by dynamic schemes.
type DynamicScheme interface {
	Scheme
	// Set returns the name of the dynamic partition set.
	Set() string
}

// StaticScheme is implemented by static schemes.
type StaticScheme interface {
	Scheme
	// StaticKeys returns the declared keys (do not modify).
	StaticKeys() []string
}

// ValidateDynamicKey checks the syntax of a static or dynamic key: 1..200
// characters, valid UTF-8, no '|', no control characters, no leading or
// trailing space, not "." or "..".
func ValidateDynamicKey(key string) error {
	switch {
	case key == "":
		return keyErr(key, "a key must not be empty")
	case len(key) > MaxKeyLen:
		return keyErr(key, "a key must be at most %d characters long", MaxKeyLen)
	case !utf8.ValidString(key):
		return keyErr(key, "a key must be valid UTF-8 text")
	case strings.Contains(key, MultiSep):
		return keyErr(key, "a key must not contain '|' (it separates the parts of multi-dimensional keys)")
	case key == "." || key == "..":
		return keyErr(key, "a key must not be %q: a URL path cannot carry it, so its partition would have no page", key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return keyErr(key, "a key must not contain control characters (found %U)", r)
		}
	}
	r0, _ := utf8.DecodeRuneInString(key)
	r1, _ := utf8.DecodeLastRuneInString(key)
	if unicode.IsSpace(r0) || unicode.IsSpace(r1) {
		return keyErr(key, "a key must not start or end with a space")
	}
	return nil
}

// SchemeTimeDim returns the time scheme of s (itself, or the time dimension of
// a multi scheme) and the dimension index (-1 when s is itself a time scheme).
// ok is false when s has no time part.
func SchemeTimeDim(s Scheme) (ts TimeScheme, dim int, ok bool) {
	switch v := s.(type) {
	case TimeScheme:
		return v, -1, true
	case MultiScheme:
		if d := v.TimeDim(); d >= 0 {
			if ts, ok := v.Dimensions()[d].Scheme.(TimeScheme); ok {
				return ts, d, true
			}
		}
	}
	return nil, -1, false
}

func quoteList(keys []string, max int) string {
	if len(keys) <= max {
		return strings.Join(keys, ", ")
	}
	return strings.Join(keys[:max], ", ") + fmt.Sprintf(", … (%d more)", len(keys)-max)
}
