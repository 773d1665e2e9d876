package views

// lineageNodeClass is a lineage node's classes: its health, the focused
// asset and the ones the overview's filter leaves out.
func lineageNodeClass(n LaidNode) string {
	c := "n h-" + n.Health
	if n.Focus {
		c += " cur"
	}
	if n.Dim {
		c += " dim"
	}
	return c
}

// healthMark is the sign before a node's label, so that a health is told
// by more than its colour.
func healthMark(h string) string {
	switch h {
	case HealthFailed:
		return "! "
	case HealthRunning:
		return "» "
	case HealthStale:
		return "~ "
	case HealthMissing:
		return "- "
	}
	return ""
}
