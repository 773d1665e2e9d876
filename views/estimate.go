package views

import (
	"math"
	"strconv"
	"strings"
)

// Estimate is a backfill preview's duration estimate as figures and names;
// EstimateText words it, counts with thousands separators as elsewhere on
// the pages.
type Estimate struct {
	// Low is the estimate (its lower end when High is set), High the upper
	// end of a range, both written as the pages write durations; Low is ""
	// when no asset has history.
	Low, High   string
	Assets      int       // assets previewed
	NoHistory   []string  // assets without a finished run or reported duration
	FromReports []string  // assets estimated from reported durations
	Sizes       []RunSize // assets whose recent runs had another size
	ChunkSize   int64     // the backfill's chunk size
}

// RunSize is the mean size of an asset's recent runs.
type RunSize struct {
	Asset          string
	PartitionsARun float64
}

// EstimateText words e: "3.0 s from recent runs of these assets at this
// concurrency", "at least …", a range with why, or "no history: …".
func EstimateText(e Estimate) string {
	if e.Low == "" {
		return "no history: no finished run or reported duration of these assets yet"
	}
	source := "recent runs"
	switch {
	case len(e.FromReports) == e.Assets-len(e.NoHistory):
		source = "reported materializations"
	case len(e.FromReports) > 0:
		source = "recent runs (reported materializations for " + strings.Join(e.FromReports, ", ") + ")"
	}
	switch {
	case len(e.NoHistory) > 0:
		return "at least " + e.Low + " (no history for " + strings.Join(e.NoHistory, ", ") + ") from " + source + " at this concurrency"
	case e.High != "":
		sizes := make([]string, len(e.Sizes))
		for i, s := range e.Sizes {
			sizes[i] = s.Asset + " had about " + partitionsARun(s.PartitionsARun)
		}
		return e.Low + " to " + e.High + " from " + source + " of these assets at this concurrency (" + strings.Join(sizes, ", ") +
			", these have " + Num(e.ChunkSize) + ": how long a run takes for its size is not known)"
	}
	return e.Low + " from " + source + " of these assets at this concurrency"
}

// partitionsARun words a mean run size: "1 partition a run", "1.5
// partitions a run", "1,000,000 partitions a run" (whole from 10 up, one
// decimal below).
func partitionsARun(x float64) string {
	n := Num(int64(math.Round(x)))
	if x < 10 {
		n = strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
	}
	if n == "1" {
		return "1 partition a run"
	}
	return n + " partitions a run"
}
