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
		parts = append(parts, StatusLabel(s.Status)+" "+Num(s.N)+" ("+Pct(s.N, b.Total)+")")
	}
	return strings.Join(parts, ", ")
}
