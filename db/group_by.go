package db

// GroupBy splits items into groups of equal key, in order of first
// appearance (each group keeps its items' order).
func GroupBy[T any, K comparable](items []T, key func(T) K) [][]T {
	idx := map[K]int{}
	var out [][]T
	for _, it := range items {
		k := key(it)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], it)
	}
	return out
}

// IndexBy maps each item's key to the item (the last one of a key wins).
func IndexBy[T any, K comparable](items []T, key func(T) K) map[K]T {
	out := make(map[K]T, len(items))
	for _, it := range items {
		out[key(it)] = it
	}
	return out
}
