package catalog

import (
	"fmt"
	"time"
)

// MappingKind is how the partitions of a downstream asset map to the
// partitions of an upstream asset.
type MappingKind string

// Partition mappings.
const (
	// MappingIdentity: a partition reads the upstream partition with the same key.
	MappingIdentity MappingKind = "identity"
	// MappingTimeWindow: a partition reads the upstream time windows that
	// overlap its own (a day reads its hours; a day reads its month). Other
	// dimensions of multi schemes with the same name are matched by value;
	// the remaining ones are read in full.
	MappingTimeWindow MappingKind = "time_window"
	// MappingAll: every partition reads every upstream partition.
	MappingAll MappingKind = "all"
	// MappingAuto (or empty) picks one from the two schemes; see ResolveMapping.
	MappingAuto MappingKind = "auto"
)

// Dep is a dependency on an upstream asset.
type Dep struct {
	Asset   string
	Mapping MappingKind
}

// IndexRange is an inclusive range of indices in a Space.
type IndexRange struct{ Lo, Hi int64 }

// Len returns the number of indices in r.
func (r IndexRange) Len() int64 { return r.Hi - r.Lo + 1 }

// CountRanges returns the number of indices in rs.
func CountRanges(rs []IndexRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// MaxMappingRanges bounds the number of ranges a single mapping returns.
const MaxMappingRanges = 1 << 16

// ResolveMapping returns the effective mapping of a dependency: m itself
// unless it is empty or auto. Auto is identity when both schemes have the
// same shape (same kind; same unit, timezone and key format for time
// schemes; same dimension names for multi schemes), time_window when both
// have a time part, all otherwise.
func ResolveMapping(m MappingKind, down, up Scheme) MappingKind {
	if m != "" && m != MappingAuto {
		return m
	}
	if sameShape(down, up) {
		return MappingIdentity
	}
	_, _, dt := SchemeTimeDim(down)
	_, _, ut := SchemeTimeDim(up)
	if dt && ut {
		return MappingTimeWindow
	}
	return MappingAll
}

func sameShape(a, b Scheme) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch x := a.(type) {
	case TimeScheme:
		y := b.(TimeScheme)
		return x.Location().String() == y.Location().String() && x.KeyFormat() == y.KeyFormat()
	case MultiScheme:
		y, ok := b.(MultiScheme)
		if !ok || len(x.Dimensions()) != len(y.Dimensions()) {
			return false
		}
		for i, d := range x.Dimensions() {
			e := y.Dimensions()[i]
			if d.Name != e.Name || !sameShape(d.Scheme, e.Scheme) {
				return false
			}
		}
		return true
	case DynamicScheme:
		y, ok := b.(DynamicScheme)
		return ok && x.Set() == y.Set()
	}
	return true
}

// CheckMapping reports whether mapping m (already resolved) can be used
// between the two schemes.
func CheckMapping(m MappingKind, down, up Scheme) error {
	switch m {
	case MappingAll:
		return nil
	case MappingIdentity:
		if down.Kind() != up.Kind() {
			return fmt.Errorf("identity mapping needs both assets to have the same kind of partitions (here %s and %s); use mapping: time_window or all", down.Kind(), up.Kind())
		}
		return nil
	case MappingTimeWindow:
		_, _, dt := SchemeTimeDim(down)
		_, _, ut := SchemeTimeDim(up)
		if !dt || !ut {
			return fmt.Errorf("time_window mapping needs time partitions on both assets (here %s and %s); use mapping: all", down.Kind(), up.Kind())
		}
		return nil
	}
	return fmt.Errorf("unknown mapping %q; use identity, time_window, all or auto", m)
}

// UpstreamOf returns the partitions of the upstream asset (as index ranges
// of upSpace) that the downstream partition downKey reads.
func UpstreamOf(dep Dep, down Scheme, downSpace Space, up Scheme, upSpace Space, downKey string) ([]IndexRange, error) {
	return mapKey(ResolveMapping(dep.Mapping, down, up), down, downSpace, up, upSpace, downKey)
}

// DownstreamOf returns the partitions of the downstream asset (as index
// ranges of downSpace) that read the upstream partition upKey.
func DownstreamOf(dep Dep, down Scheme, downSpace Space, up Scheme, upSpace Space, upKey string) ([]IndexRange, error) {
	return mapKey(ResolveMapping(dep.Mapping, down, up), up, upSpace, down, downSpace, upKey)
}

// mapKey maps key of (from, fromSpace) to index ranges of toSpace. All the
// mappings are symmetric (overlap of windows, equality of keys).
func mapKey(kind MappingKind, from Scheme, fromSpace Space, to Scheme, toSpace Space, key string) ([]IndexRange, error) {
	if _, err := fromSpace.Index(key); err != nil {
		return nil, err
	}
	n := toSpace.Len()
	switch kind {
	case MappingAll:
		if n == 0 {
			return nil, nil
		}
		return []IndexRange{{0, n - 1}}, nil
	case MappingIdentity:
		if i, err := toSpace.Index(key); err == nil {
			return []IndexRange{{i, i}}, nil
		}
		return nil, nil
	case MappingTimeWindow:
	default:
		return nil, fmt.Errorf("unknown mapping %q", kind)
	}
	fts, fdim, ok1 := SchemeTimeDim(from)
	tts, tdim, ok2 := SchemeTimeDim(to)
	if !ok1 || !ok2 {
		return nil, CheckMapping(kind, to, from)
	}
	timeKey := key
	var parts []string
	var fm MultiScheme
	if fdim >= 0 {
		fm = from.(MultiScheme)
		var err error
		if parts, err = fm.Split(key); err != nil {
			return nil, err
		}
		timeKey = parts[fdim]
	}
	wi, err := fts.WindowIndex(timeKey)
	if err != nil {
		return nil, err
	}
	ws, we := fts.WindowStart(wi), fts.WindowStart(wi+1)
	lo, hi := tts.IndexAt(ws), tts.IndexAt(we.Add(-time.Nanosecond))
	if tdim < 0 {
		return clampRange(lo, hi, n), nil
	}
	tm := to.(MultiScheme)
	ms, ok := toSpace.(MultiSpace)
	if !ok {
		return nil, fmt.Errorf("space of a multi scheme must implement MultiSpace")
	}
	dims := ms.DimSpaces()
	lens := make([]int64, len(dims))
	cons := make([]IndexRange, len(dims))
	for d, dsp := range dims {
		lens[d] = dsp.Len()
		if d == tdim {
			r := clampRange(lo, hi, lens[d])
			if r == nil {
				return nil, nil
			}
			cons[d] = r[0]
			continue
		}
		if fm != nil {
			if fd := fm.(*multiScheme).dimIndex(tm.Dimensions()[d].Name); fd >= 0 {
				j, err := dsp.Index(parts[fd])
				if err != nil {
					return nil, nil
				}
				cons[d] = IndexRange{j, j}
				continue
			}
		}
		if lens[d] == 0 {
			return nil, nil
		}
		cons[d] = IndexRange{0, lens[d] - 1}
	}
	return rectRanges(lens, ms.Strides(), cons)
}

func clampRange(lo, hi, n int64) []IndexRange {
	lo = max(lo, 0)
	hi = min(hi, n-1)
	if lo > hi {
		return nil
	}
	return []IndexRange{{lo, hi}}
}

// rectRanges returns the index ranges covering the hyper-rectangle cons
// (one inclusive range per dimension) of a row-major space.
func rectRanges(lens, strides []int64, cons []IndexRange) ([]IndexRange, error) {
	k := len(lens)
	j := k - 1
	for j >= 0 && cons[j].Lo == 0 && cons[j].Hi == lens[j]-1 {
		j--
	}
	if j < 0 {
		total := lens[0] * strides[0]
		if total == 0 {
			return nil, nil
		}
		return []IndexRange{{0, total - 1}}, nil
	}
	count := int64(1)
	for d := 0; d < j; d++ {
		count *= cons[d].Len()
		if count > MaxMappingRanges {
			return nil, fmt.Errorf("partition mapping selects more than %d separate ranges", MaxMappingRanges)
		}
	}
	blockLo, blockHi := cons[j].Lo*strides[j], (cons[j].Hi+1)*strides[j]-1
	out := make([]IndexRange, 0, count)
	cur := make([]int64, j)
	for d := range cur {
		cur[d] = cons[d].Lo
	}
	for {
		var base int64
		for d := range cur {
			base += cur[d] * strides[d]
		}
		r := IndexRange{base + blockLo, base + blockHi}
		if l := len(out); l > 0 && out[l-1].Hi+1 == r.Lo {
			out[l-1].Hi = r.Hi
		} else {
			out = append(out, r)
		}
		d := j - 1
		for d >= 0 {
			cur[d]++
			if cur[d] <= cons[d].Hi {
				break
			}
			cur[d] = cons[d].Lo
			d--
		}
		if d < 0 {
			break
		}
	}
	return out, nil
}
