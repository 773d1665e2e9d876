package views

import (
	"fmt"
	"strings"
)

func joinList(s []string) string { return strings.Join(s, ", ") }

// sensorBadgeClass colours a sensor's state like the backfill states.
func sensorBadgeClass(state string) string {
	switch state {
	case SensorStateOK:
		return "st-SUCCEEDED"
	case SensorStateError:
		return "st-FAILED"
	case SensorStatePaused:
		return "st-PAUSED"
	}
	return "st-CANCELED"
}

func evalKindLabel(kind string) string {
	switch kind {
	case "dry_run":
		return "dry run"
	case "reset":
		return "cursor reset"
	}
	return kind
}

func prefixSuffix(p string) string {
	if p == "" {
		return ""
	}
	return " starting with " + p
}

// sensorCountsText is what a sensor did, in numbers.
func sensorCountsText(s SensorRow) string {
	if s.Kind == "push" {
		return fmt.Sprintf("%s %s, %s %s", Num(s.Events), plural(s.Events, "event", "events"), Num(s.Launches), plural(s.Launches, "backfill", "backfills"))
	}
	out := fmt.Sprintf("%s %s, %s %s", Num(s.Evals), plural(s.Evals, "evaluation", "evaluations"), Num(s.Launches), plural(s.Launches, "backfill", "backfills"))
	if s.Failures > 0 {
		out += fmt.Sprintf(", %s failing in a row", Num(s.Failures))
	}
	return out
}
