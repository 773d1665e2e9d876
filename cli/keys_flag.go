package cli

import "strings"

// keysFlag is --partitions (split: comma-separated keys) or --partition (one
// key as written, so a key may contain commas). Both are repeatable and add
// to the same list in command-line order, so no key given is dropped.
type keysFlag struct {
	s     *selectorFlags
	split bool
}

func (f *keysFlag) Set(v string) error {
	f.s.keysGiven = true
	if !f.split {
		f.s.explicitKeys = append(f.s.explicitKeys, v)
		return nil
	}
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			f.s.explicitKeys = append(f.s.explicitKeys, k)
		}
	}
	return nil
}

func (f *keysFlag) Type() string {
	if f.split {
		return "keys"
	}
	return "key"
}

func (f *keysFlag) String() string { return "" }
