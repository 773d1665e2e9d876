package views

import "strings"

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
