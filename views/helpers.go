package views

import (
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

func barLabel(b Bar) string {
	if b.Total == 0 {
		return "no partitions"
	}
	parts := make([]string, 0, len(b.Segs))
	for _, s := range b.Segs {
		parts = append(parts, LegendLabel(b, s.Status)+" "+Num(s.N)+" ("+Pct(s.N, b.Total)+")")
	}
	return strings.Join(parts, ", ")
}

// LegendLabel names a segment of bar b. When the bar splits materialized
// partitions into fresh and stale (withStale), both say they are
// materialized, so that "Materialized, fresh 119" and "Materialized, stale
// 558" add up to the 677 materialized that the backfill preview and the API
// count.
func LegendLabel(b Bar, status string) string {
	split := false
	for _, s := range b.Segs {
		split = split || s.Status == SegStale
	}
	switch {
	case split && status == "materialized":
		return "Materialized, fresh"
	case split && status == SegStale:
		return "Materialized, stale"
	}
	return StatusLabel(status)
}
