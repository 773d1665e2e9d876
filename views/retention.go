package views

import (
	"fmt"
	"time"
)

// RetentionText writes a history retention in words: "90 days", "1 day",
// "36 hours", "1 h 30 min".
func RetentionText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d > 0 && d%day == 0:
		return Num(int64(d/day)) + " " + plural(int64(d/day), "day", "days")
	case d > 0 && d%time.Hour == 0:
		return Num(int64(d/time.Hour)) + " " + plural(int64(d/time.Hour), "hour", "hours")
	case d >= time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return d.String()
}

// PrunedText says how much of a history the retention pruned: "1,234
// older ticks pruned (retention 90 days)", or "no ticks pruned yet
// (retention 90 days)".
func PrunedText(n int64, singular, pluralForm, retention string) string {
	if n == 0 {
		return fmt.Sprintf("no %s pruned yet (retention %s)", pluralForm, retention)
	}
	return fmt.Sprintf("%s older %s pruned (retention %s)", Num(n), plural(n, singular, pluralForm), retention)
}

// SensorPrunedText is a sensor's PrunedText: its evaluations (poll) or
// events (push), and the other kind too if any was pruned (a sensor that
// changed kind).
func SensorPrunedText(d SensorDetail) string {
	evals := PrunedText(d.PrunedEvals, "evaluation", "evaluations", d.Retention)
	events := PrunedText(d.PrunedEvents, "event", "events", d.Retention)
	switch {
	case d.Kind == "poll" && d.PrunedEvents > 0:
		return evals + "; " + events
	case d.Kind == "poll":
		return evals
	case d.PrunedEvals > 0:
		return events + "; " + evals
	}
	return events + ". A pruned event's message id still answers as a duplicate"
}
