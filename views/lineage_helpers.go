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

// edgeGroup is the paths of the edges of one mapping (drawn alike).
type edgeGroup struct {
	Mapping string
	Ds      []string
}

// edgeGroups groups edges by mapping, in order of first appearance.
func edgeGroups(es []LaidEdge) []edgeGroup {
	var gs []edgeGroup
	at := map[string]int{}
	for _, e := range es {
		i, ok := at[e.Mapping]
		if !ok {
			i = len(gs)
			at[e.Mapping] = i
			gs = append(gs, edgeGroup{Mapping: e.Mapping})
		}
		gs[i].Ds = append(gs[i].Ds, e.D)
	}
	return gs
}
