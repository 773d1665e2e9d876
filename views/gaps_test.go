package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The gap summary says how many ranges there are, how many are listed, and
// that failed partitions count as not materialized.
func TestGapListSummary(t *testing.T) {
	render := func(g GapsModel) string {
		t.Helper()
		var buf bytes.Buffer
		if err := GapList(g).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		doc, err := goquery.NewDocumentFromReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(doc.Find(`[data-testid="gaps-total"]`).Text()), " ")
	}
	ranges := make([]GapRow, 50)
	for i := range ranges {
		ranges[i] = GapRow{Start: "a", End: "b", Count: 2}
	}
	for _, c := range []struct {
		g    GapsModel
		want string
	}{
		{GapsModel{Ranges: ranges, RangeCount: 73, Total: 290}, "290 partitions not materialized (missing or failed) in 73 ranges; the first 50 are listed"},
		{GapsModel{Ranges: ranges[:1], RangeCount: 1, Total: 1}, "1 partition not materialized (missing or failed) in 1 range"},
		{GapsModel{Ranges: ranges, RangeCount: 10000, Total: 40000, Truncated: true}, "at least 40,000 partitions not materialized (missing or failed) in at least 10000 ranges; the first 50 are listed"},
	} {
		if got := render(c.g); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
}
