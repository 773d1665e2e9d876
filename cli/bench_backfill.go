package cli

import (
	"encoding/json"
	"os"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/jobs"
)

func newBenchBackfillCmd() *cobra.Command {
	var partitions, chunk int64
	var conc int
	var executor, cpuprofile string
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Run a whole backfill through the real controller and store in a temporary database",
		Long: `Run a whole backfill of one hourly asset through the real controller and store
in a temporary database, and measure in the same process the raw ceiling:
batched upserts (1,000 rows per transaction) of the same status rows into a
bare SQLite table. Prints one JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 || partitions > 10_000_000 {
				return usageErr("--partitions must be between 1 and 10000000, got %d", partitions)
			}
			if chunk < 1 || chunk > jobs.MaxChunkSize {
				return usageErr("--chunk-size must be between 1 and %d, got %d", jobs.MaxChunkSize, chunk)
			}
			if conc < 1 || conc > jobs.MaxConcurrentRunsCap {
				return usageErr("--concurrency must be between 1 and %d, got %d", jobs.MaxConcurrentRunsCap, conc)
			}
			if executor != "noop" {
				return usageErr("--executor must be noop, got %q", executor)
			}
			var prof *os.File
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return usageErr("--cpuprofile: %v", err)
				}
				defer f.Close()
				prof = f
			}
			res, err := bench.Backfill(cmd.Context(), partitions, chunk, conc, prof)
			if err != nil {
				return &exitError{ExitServer, err}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&partitions, "partitions", 1_000_000, "partitions of the benchmark asset (all selected)")
	f.Int64Var(&chunk, "chunk-size", 100, "partitions per chunk run")
	f.IntVar(&conc, "concurrency", 100, "max concurrent runs (global and per backfill)")
	f.StringVar(&executor, "executor", "noop", "executor: noop (returns at once)")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the backfill (not the raw ceiling) to this file")
	return cmd
}
