package cli

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tessera-dev/tessera/views"
)

// num writes a count with thousands separators, as the pages do (1,000,000).
func num(n int64) string { return views.Num(n) }

// count writes a count from a decoded JSON answer (numbers decode into any
// as float64) as an integer with thousands separators: 1,000,000, where %v
// wrote 1e+06. Anything that is not a number is written as it is.
func count(v any) string {
	switch n := v.(type) {
	case float64:
		if !math.IsInf(n, 0) && !math.IsNaN(n) && n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return num(int64(n))
		}
	case int64:
		return num(n)
	case int:
		return num(int64(n))
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return num(i)
		}
	}
	return fmt.Sprint(v)
}

// nOf writes "1 event", "2 events" (counts with separators).
func nOf(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return num(n) + " " + word + "s"
}

// countOf is count(v) followed by word, in the plural unless v is 1: "1
// partition", "1,000 partitions".
func countOf(v any, word string) string {
	if n, ok := v.(float64); ok && n == 1 {
		return "1 " + word
	}
	return count(v) + " " + word + "s"
}
