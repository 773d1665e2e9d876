package catalog

import "strings"

// ParseRange resolves an inclusive key range [start, end] to indices in sp.
// An empty start means the first partition, an empty end the last one. For
// a multi scheme with a time dimension, start and end may be full keys or
// just the time part; a time part covers every combination of that time
// window (contiguous, because time is the major dimension).
// Errors: *KeyError for a key not in the space, *RangeError when end < start.
func ParseRange(sp Space, s Scheme, start, end string) (lo, hi int64, err error) {
	lo, _, err = rangeBound(sp, s, start, false)
	if err != nil {
		return 0, 0, err
	}
	_, hi, err = rangeBound(sp, s, end, true)
	if err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, &RangeError{Start: start, End: end}
	}
	return lo, hi, nil
}

// rangeBound returns the index range [lo, hi] that key denotes.
func rangeBound(sp Space, s Scheme, key string, isEnd bool) (lo, hi int64, err error) {
	n := sp.Len()
	if key == "" {
		if n == 0 {
			return 0, 0, keyErr(key, "the asset has no partitions yet")
		}
		if isEnd {
			return n - 1, n - 1, nil
		}
		return 0, 0, nil
	}
	if m, ok := s.(MultiScheme); ok && m.TimeDim() == 0 && !strings.Contains(key, MultiSep) {
		ms, ok := sp.(MultiSpace)
		if ok {
			ts := ms.DimSpaces()[0]
			t, err := ts.Index(key)
			if err != nil {
				if ke, ok := err.(*KeyError); ok {
					return 0, 0, keyErr(key, "dimension %s: %s", m.Dimensions()[0].Name, ke.Reason)
				}
				return 0, 0, err
			}
			stride := ms.Strides()[0]
			if stride == 0 || n == 0 {
				return 0, 0, keyErr(key, "the asset has no partitions for this time window yet")
			}
			return t * stride, (t+1)*stride - 1, nil
		}
	}
	i, err := sp.Index(key)
	if err != nil {
		return 0, 0, err
	}
	return i, i, nil
}
