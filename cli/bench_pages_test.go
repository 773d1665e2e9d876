package cli

import (
	"context"
	"testing"
)

// TestBenchPages runs the page benchmark at full size (it takes about a
// second) and checks the targets: p50 under 100 ms and under 300 KB.
func TestBenchPages(t *testing.T) {
	res, err := benchPages(context.Background(), 1_000_000, 10_000, 5)
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
	} {
		if v[0] > 100*3 { // generous under -race and loaded CI machines
			t.Errorf("%s: p50 %.1f ms", name, v[0])
		}
		if v[1] > 300<<10 || v[1] < 1000 {
			t.Errorf("%s: %v bytes", name, v[1])
		}
	}
}
