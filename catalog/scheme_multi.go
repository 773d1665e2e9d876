package catalog

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"
)

type multiScheme struct {
	dims    []Dimension
	timeDim int
}

// NewMultiScheme builds a multi-dimensional scheme. It needs 2+ dimensions
// with unique non-empty names, at most one time dimension (which must be
// the first), and no nested multi scheme.
func NewMultiScheme(dims []Dimension) (MultiScheme, error) {
	if len(dims) < 2 {
		return nil, paramErr("", "a multi scheme needs at least two dimensions, e.g. multi: {date: {daily: {start: 2025-01-01}}, region: {static: [eu, us]}}")
	}
	m := &multiScheme{dims: append([]Dimension(nil), dims...), timeDim: -1}
	seen := map[string]bool{}
	for i, d := range dims {
		if d.Name == "" || strings.Contains(d.Name, MultiSep) {
			return nil, paramErr(d.Name, "dimension name %q must be non-empty and must not contain '|'", d.Name)
		}
		if seen[d.Name] {
			return nil, paramErr(d.Name, "dimension %q is declared twice", d.Name)
		}
		seen[d.Name] = true
		if d.Scheme == nil {
			return nil, paramErr(d.Name, "dimension %q has no scheme", d.Name)
		}
		switch {
		case d.Scheme.Kind() == KindMulti:
			return nil, paramErr(d.Name, "dimension %q: multi schemes cannot be nested", d.Name)
		case d.Scheme.Kind().IsTime():
			if m.timeDim >= 0 {
				return nil, paramErr(d.Name, "dimension %q: a multi scheme may have at most one time dimension (%q is one already)", d.Name, dims[m.timeDim].Name)
			}
			if i != 0 {
				return nil, paramErr(d.Name, "the time dimension %q must be declared first (time-major order keeps ranges of dates contiguous)", d.Name)
			}
			m.timeDim = i
		}
	}
	return m, nil
}

func (m *multiScheme) Kind() Kind              { return KindMulti }
func (m *multiScheme) Dimensions() []Dimension { return m.dims }
func (m *multiScheme) TimeDim() int            { return m.timeDim }

func (m *multiScheme) Describe() string {
	parts := make([]string, len(m.dims))
	for i, d := range m.dims {
		if k := d.Scheme.Kind(); k.IsTime() {
			parts[i] = string(k)
		} else {
			parts[i] = d.Name
		}
	}
	return strings.Join(parts, " × ")
}

func (m *multiScheme) dimNames() string {
	names := make([]string, len(m.dims))
	for i, d := range m.dims {
		names[i] = d.Name
	}
	return strings.Join(names, MultiSep)
}

func (m *multiScheme) Join(parts []string) string { return strings.Join(parts, MultiSep) }

func (m *multiScheme) splitRaw(key string) ([]string, error) {
	parts := strings.Split(key, MultiSep)
	if len(parts) != len(m.dims) {
		return nil, keyErr(key, "expected %d parts separated by '|' (%s)", len(m.dims), m.dimNames())
	}
	return parts, nil
}

func (m *multiScheme) Split(key string) ([]string, error) {
	parts, err := m.splitRaw(key)
	if err != nil {
		return nil, err
	}
	for i, d := range m.dims {
		if err := d.Scheme.ValidateKey(parts[i]); err != nil {
			return nil, wrapDimErr(key, d.Name, err)
		}
	}
	return parts, nil
}

func wrapDimErr(key, dim string, err error) error {
	if ke, ok := err.(*KeyError); ok {
		return keyErr(key, "dimension %s: %q: %s", dim, ke.Key, ke.Reason)
	}
	return keyErr(key, "dimension %s: %v", dim, err)
}

func (m *multiScheme) ValidateKey(key string) error {
	_, err := m.Split(key)
	return err
}

func (m *multiScheme) MatchDims(key string, dims map[string][]string) bool {
	parts, err := m.splitRaw(key)
	if err != nil {
		return false
	}
	for name, allowed := range dims {
		i := m.dimIndex(name)
		if i < 0 {
			return false
		}
		if len(allowed) == 0 {
			continue
		}
		if !slices.Contains(allowed, parts[i]) {
			return false
		}
	}
	return true
}

func (m *multiScheme) dimIndex(name string) int {
	for i, d := range m.dims {
		if d.Name == name {
			return i
		}
	}
	return -1
}

func (m *multiScheme) Space(now time.Time, dyn DynamicKeys) Space {
	sp := &multiSpace{m: m, dims: make([]Space, len(m.dims)), strides: make([]int64, len(m.dims))}
	for i, d := range m.dims {
		sp.dims[i] = d.Scheme.Space(now, dyn)
	}
	n := int64(1)
	for i := len(sp.dims) - 1; i >= 0; i-- {
		sp.strides[i] = n
		n = satMul(n, sp.dims[i].Len())
	}
	sp.n = n
	return sp
}

func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// MultiSpace is the Space of a multi scheme; it exposes the per-dimension spaces.
type MultiSpace interface {
	Space
	DimSpaces() []Space
	// Strides returns, per dimension, the index distance between consecutive values.
	Strides() []int64
}

type multiSpace struct {
	m       *multiScheme
	dims    []Space
	strides []int64
	n       int64
}

func (sp *multiSpace) Len() int64         { return sp.n }
func (sp *multiSpace) DimSpaces() []Space { return sp.dims }
func (sp *multiSpace) Strides() []int64   { return sp.strides }

func (sp *multiSpace) Key(i int64) string {
	if i < 0 || i >= sp.n {
		return ""
	}
	var b strings.Builder
	for d := range sp.dims {
		if d > 0 {
			b.WriteString(MultiSep)
		}
		b.WriteString(sp.dims[d].Key(i / sp.strides[d]))
		i %= sp.strides[d]
	}
	return b.String()
}

func (sp *multiSpace) Index(key string) (int64, error) {
	parts, err := sp.m.splitRaw(key)
	if err != nil {
		return 0, err
	}
	var idx int64
	for d, part := range parts {
		j, err := sp.dims[d].Index(part)
		if err != nil {
			return 0, wrapDimErr(key, sp.m.dims[d].Name, err)
		}
		idx += j * sp.strides[d]
	}
	return idx, nil
}

func (sp *multiSpace) Keys(offset, limit int64) []string {
	lo, hi := clampWindow(offset, limit, sp.n)
	out := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, sp.Key(i))
	}
	return out
}

// String helps debugging.
func (sp *multiSpace) String() string {
	return fmt.Sprintf("multi space of %d keys (%s)", sp.n, sp.m.Describe())
}
