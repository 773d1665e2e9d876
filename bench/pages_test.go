package bench

import (
	"context"
	"testing"
)

// TestBenchPages runs the page benchmark at full size (it takes about a
// second) and checks what it measures: every page renders and stays under
// 300 KB. Times are reported by `tessera bench pages`, not asserted here.
func TestBenchPages(t *testing.T) {
	t.Parallel()
	res, err := Pages(context.Background(), 1_000_000, 10_000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks != 10_000 {
		t.Fatalf("%d chunks", res.Chunks)
	}
	for name, v := range map[string][2]float64{
		"backfill page": {res.PageP50ms, float64(res.PageBytes)},
		"grid partial":  {res.GridP50ms, float64(res.GridBytes)},
		"chunk table":   {res.ChunksP50ms, float64(res.ChunksBytes)},
		"summary":       {res.SummaryP50ms, float64(res.SummaryBytes)},
		"gantt partial": {res.GanttP50ms, float64(res.GanttBytes)},
		"runs page":     {res.RunsP50ms, float64(res.RunsBytes)},
		"failed runs":   {res.RunsFailedP50ms, float64(res.RunsFailedBytes)},
	} {
		if v[0] <= 0 {
			t.Errorf("%s: no time measured", name)
		}
		if v[1] > 300<<10 || v[1] < 1000 {
			t.Errorf("%s: %v bytes", name, v[1])
		}
	}
	if res.EventsP50ms <= 0 || res.EventsBytes <= 0 {
		t.Errorf("events partial: %v ms, %d bytes", res.EventsP50ms, res.EventsBytes)
	}
}
