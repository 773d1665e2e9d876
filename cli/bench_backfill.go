package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
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
			if err := checkBackfillBench(partitions, chunk, conc, executor); err != nil {
				return err
			}
			prof, err := openCPUProfile(cpuprofile)
			if err != nil {
				return err
			}
			defer prof.Close()
			res, err := bench.Backfill(cmd.Context(), partitions, chunk, conc, prof)
			return printBench(cmd, res, err)
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
