package bench

import (
	"context"
	"testing"
)

// Benchmarks of whole backfills through the real controller and store (the
// same code as `tessera bench backfill`), with the raw SQLite ceiling of the
// same rows measured in the same process:
//
//	go test -run '^$' -bench Backfill -benchtime 1x ./bench/
func benchmarkBackfill(b *testing.B, partitions, chunk int64, conc int) {
	for b.Loop() {
		res, err := Backfill(context.Background(), BackfillOptions{Partitions: partitions, ChunkSize: chunk, Concurrency: conc}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.PartitionsPerS, "partitions/s")
		b.ReportMetric(res.RunsPerS, "runs/s")
		b.ReportMetric(res.RatioToRaw, "ratio_to_raw")
		b.ReportMetric(res.CompletionLagMs, "completion_lag_ms")
	}
}

func BenchmarkBackfill100kInChunksOf100(b *testing.B)     { benchmarkBackfill(b, 100_000, 100, 100) }
func BenchmarkBackfill5kSinglePartitionRuns(b *testing.B) { benchmarkBackfill(b, 5_000, 1, 100) }
