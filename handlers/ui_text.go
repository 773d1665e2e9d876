package handlers

// keySpan names the partitions from first to last: one key when they are the
// same ("2026-11-20", not "2026-11-20 … 2026-11-20").
func keySpan(first, last string) string {
	if first == last {
		return first
	}
	return first + " … " + last
}
