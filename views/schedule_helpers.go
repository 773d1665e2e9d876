package views

import (
	"fmt"
	"strings"
)

func joinComma(s []string) string { return strings.Join(s, ", ") }

// stripLabel says a strip of tick outcomes in words.
func stripLabel(cells []TickCell) string {
	n := map[string]int{}
	var order []string
	for _, c := range cells {
		if n[c.Outcome] == 0 {
			order = append(order, c.Outcome)
		}
		n[c.Outcome]++
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%d %s", n[o], o)
	}
	return fmt.Sprintf("last %d ticks, oldest first: %s", len(cells), strings.Join(parts, ", "))
}

func outcomeSuffix(o string) string {
	if o == "" {
		return ""
	}
	return " " + o
}
