package catalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var dayUnit = regexp.MustCompile(`(\d+(?:\.\d+)?)d`)

// ParseDuration parses a Go duration ("90s", "1h30m") that may also use "d"
// for days ("2d", "1d12h"). Negative durations are rejected.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration; use e.g. 30s, 15m, 2h or 1d")
	}
	conv := dayUnit.ReplaceAllStringFunc(s, func(m string) string {
		f, err := strconv.ParseFloat(strings.TrimSuffix(m, "d"), 64)
		if err != nil {
			return m
		}
		return strconv.FormatFloat(f*24, 'f', -1, 64) + "h"
	})
	d, err := time.ParseDuration(conv)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return 0, fmt.Errorf("duration %q has no unit; use e.g. %ss", s, s)
		}
		return 0, fmt.Errorf("%q is not a duration; use e.g. 30s, 15m, 2h or 1d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	return d, nil
}

// Throttle limits how many runs a pool may start per period.
type Throttle struct {
	Runs int
	Per  time.Duration
}

func (t Throttle) String() string {
	switch t.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", t.Runs)
	case time.Minute:
		return fmt.Sprintf("%d/m", t.Runs)
	case time.Hour:
		return fmt.Sprintf("%d/h", t.Runs)
	case 24 * time.Hour:
		return fmt.Sprintf("%d/d", t.Runs)
	}
	return fmt.Sprintf("%d/%s", t.Runs, t.Per)
}

// Interval returns the average spacing between runs allowed by the throttle.
func (t Throttle) Interval() time.Duration {
	if t.Runs <= 0 {
		return t.Per
	}
	return t.Per / time.Duration(t.Runs)
}

// ParseThrottle parses "N/s", "N/m", "N/h", "N/d" or "N/<duration>" (e.g. "10/30s").
func ParseThrottle(s string) (Throttle, error) {
	// Each refusal says which part is wrong (a newcomer's audit: one
	// sentence for every bad value never said what to change).
	const how = "; use runs per period like 120/h or 10/30s (units s, m, h, d)"
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Throttle{}, fmt.Errorf("throttle %q has no period (no /)"+how, s)
	}
	runs, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || runs < 1 {
		return Throttle{}, fmt.Errorf("throttle %q: %q before the / is not a whole number of runs of at least 1"+how, s, strings.TrimSpace(n))
	}
	per = strings.TrimSpace(per)
	var d time.Duration
	switch per {
	case "s":
		d = time.Second
	case "m":
		d = time.Minute
	case "h":
		d = time.Hour
	case "d":
		d = 24 * time.Hour
	default:
		d, err = ParseDuration(per)
		if err != nil || d <= 0 {
			return Throttle{}, fmt.Errorf("throttle %q: %q after the / is not a period (s, m, h, d or a duration like 30s)"+how, s, per)
		}
		if d < time.Millisecond {
			return Throttle{}, fmt.Errorf("throttle %q: a period of %s is under a millisecond, the finest the engine counts starts by"+how, s, per)
		}
	}
	return Throttle{Runs: runs, Per: d}, nil
}

// HumanRate writes a rate of things (unit: " partitions", or "" for a bare
// number) per second, per minute below one a second: "12 partitions/s",
// "3.4/s", "5.0 partitions/min". The backfill page and the CLI's --wait
// both use it.
func HumanRate(perSec float64, unit string) string {
	switch {
	case perSec <= 0:
		return "0" + unit + "/s"
	case perSec >= 10:
		return fmt.Sprintf("%.0f%s/s", perSec, unit)
	case perSec >= 1:
		return fmt.Sprintf("%.1f%s/s", perSec, unit)
	}
	return fmt.Sprintf("%.1f%s/min", perSec*60, unit)
}

// HumanDuration writes a duration for people, to a precision that reads
// well: "350 ms", "4.6 s", "20 min 3 s", "8 h 24 min", "7 days 19 h". Pages,
// estimates and the CLI all use it, so one length always reads the same.
func HumanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days %d h", int(d.Hours()/24), int(d.Hours())%24)
}
