package catalog

// Suggest is " (did you mean "x"?)" for the option closest to s (a few
// edits away, case ignored), or "" when none is close: the hint the
// workspace's own problems give, for callers outside the catalog.
func Suggest(s string, options []string) string { return suggest(s, options) }

// EditDistance is the Levenshtein distance between a and b, counted in
// runes: the edits that turn one into the other.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
