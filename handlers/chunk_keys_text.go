package handlers

import (
	"context"
	"fmt"
)

// chunkKeysText describes a chunk's partitions by its first and last keys:
// "a … z" when they are every partition from a to z, and "a, …, z (not
// contiguous)" when they are n keys picked between them (an explicit list, a
// status filter, a retry of failed partitions), which "a … z" would make
// read as a range of many more. spaces caches the assets' key spaces.
func (h *Handler) chunkKeysText(ctx context.Context, asset, first, last string, n int64, spaces map[string]*assetCtx) string {
	if first == last {
		return first
	}
	a, ok := spaces[asset]
	if !ok {
		if ac, err := h.asset(ctx, asset); err == nil {
			a = &ac
		}
		spaces[asset] = a
	}
	if a != nil {
		lo, err1 := a.Space.Index(first)
		hi, err2 := a.Space.Index(last)
		if err1 == nil && err2 == nil && hi-lo+1 != n {
			if n == 2 {
				return first + ", " + last
			}
			return fmt.Sprintf("%s, …, %s (not contiguous)", first, last)
		}
	}
	return first + " … " + last
}
