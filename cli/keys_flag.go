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
		return "KEY,KEY..."
	}
	return "KEY"
}

func (f *keysFlag) String() string { return "" }

// dimensionFlag is --dimension (split: NAME=V1,V2) or --dimension-value
// (NAME=V, the value as written, so it may contain commas). Both are
// repeatable and add to the same list in command-line order.
type dimensionFlag struct {
	s     *selectorFlags
	split bool
}

// dimensionArg is one --dimension or --dimension-value as given.
type dimensionArg struct {
	arg   string
	split bool
}

func (f *dimensionFlag) Set(v string) error {
	f.s.dimensions = append(f.s.dimensions, dimensionArg{arg: v, split: f.split})
	return nil
}

func (f *dimensionFlag) Type() string { return "NAME=VALUE" }

func (f *dimensionFlag) String() string { return "" }
