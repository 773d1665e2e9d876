package catalog

// Suggest is " (did you mean "x"?)" for the option closest to s (a few
// edits away, case ignored), or "" when none is close: the hint the
// workspace's own problems give, for callers outside the catalog.
func Suggest(s string, options []string) string { return suggest(s, options) }
