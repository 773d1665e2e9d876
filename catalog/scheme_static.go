package catalog

import (
	"fmt"
	"time"
)

type staticScheme struct {
	keys  []string
	index map[string]int64
}

// NewStaticScheme builds a static scheme from a list of unique keys.
func NewStaticScheme(keys []string) (StaticScheme, error) {
	if len(keys) == 0 {
		return nil, paramErr("", "a static scheme needs at least one key, e.g. static: [eu, us]")
	}
	s := &staticScheme{keys: append([]string(nil), keys...), index: make(map[string]int64, len(keys))}
	for i, k := range keys {
		if err := ValidateDynamicKey(k); err != nil {
			return nil, paramErr("", "static key %q: %s", k, err.(*KeyError).Reason)
		}
		if _, dup := s.index[k]; dup {
			return nil, paramErr("", "static key %q is listed twice; keys must be unique", k)
		}
		s.index[k] = int64(i)
	}
	return s, nil
}

func (s *staticScheme) Kind() Kind           { return KindStatic }
func (s *staticScheme) StaticKeys() []string { return s.keys }
func (s *staticScheme) Describe() string     { return "static: " + quoteList(s.keys, 8) }

func (s *staticScheme) Space(time.Time, DynamicKeys) Space {
	return &listSpace{keys: s.keys, index: s.index, notFound: s.notFound}
}

func (s *staticScheme) notFound(key string) error {
	return keyErr(key, "not one of the static keys (%s)", quoteList(s.keys, 8))
}

func (s *staticScheme) ValidateKey(key string) error {
	if _, ok := s.index[key]; !ok {
		return s.notFound(key)
	}
	return nil
}

type dynamicScheme struct{ set string }

// NewDynamicScheme builds a dynamic scheme whose keys come from the named set.
func NewDynamicScheme(set string) (DynamicScheme, error) {
	if set == "" {
		return nil, paramErr("", "a dynamic scheme needs the name of its partition set, e.g. dynamic: partners")
	}
	if err := ValidateDynamicKey(set); err != nil {
		return nil, paramErr("", "dynamic set name %q: %s", set, err.(*KeyError).Reason)
	}
	return &dynamicScheme{set: set}, nil
}

func (s *dynamicScheme) Kind() Kind       { return KindDynamic }
func (s *dynamicScheme) Set() string      { return s.set }
func (s *dynamicScheme) Describe() string { return fmt.Sprintf("dynamic (%s)", s.set) }

func (s *dynamicScheme) ValidateKey(key string) error { return ValidateDynamicKey(key) }

// Space builds the key index once (O(n)); lookups are then O(1).
func (s *dynamicScheme) Space(_ time.Time, dyn DynamicKeys) Space {
	var keys []string
	if dyn != nil {
		keys = dyn.DynamicKeys(s.set)
	}
	idx := make(map[string]int64, len(keys))
	uniq := keys[:0:0]
	for _, k := range keys {
		if _, dup := idx[k]; dup {
			continue
		}
		idx[k] = int64(len(uniq))
		uniq = append(uniq, k)
	}
	return &listSpace{keys: uniq, index: idx, notFound: func(key string) error {
		if err := ValidateDynamicKey(key); err != nil {
			return err
		}
		return keyErr(key, "not a registered key of the dynamic partition set %q; add it first", s.set)
	}}
}

// listSpace is the Space of static and dynamic schemes.
type listSpace struct {
	keys     []string
	index    map[string]int64
	notFound func(string) error
}

func (sp *listSpace) Len() int64 { return int64(len(sp.keys)) }

func (sp *listSpace) Key(i int64) string {
	if i < 0 || i >= int64(len(sp.keys)) {
		return ""
	}
	return sp.keys[i]
}

func (sp *listSpace) Index(key string) (int64, error) {
	if i, ok := sp.index[key]; ok {
		return i, nil
	}
	return 0, sp.notFound(key)
}

func (sp *listSpace) Keys(offset, limit int64) []string {
	lo, hi := clampWindow(offset, limit, int64(len(sp.keys)))
	return append([]string(nil), sp.keys[lo:hi]...)
}
