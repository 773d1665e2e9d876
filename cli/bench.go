package cli

import (
	"encoding/json"
	"os"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/jobs"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure Tessera on generated data (prints one JSON line)"}
	cmd.AddCommand(newBenchKeysCmd())
	var partitions, requests int
	grid := &cobra.Command{
		Use:   "grid",
		Short: "Render the asset page of one hourly asset of N partitions through the real HTTP handler",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 || partitions > 10_000_000 {
				return usageErr("--partitions must be between 1 and 10000000, got %d", partitions)
			}
			if requests < 1 {
				return usageErr("--requests must be at least 1, got %d", requests)
			}
			res, err := bench.Grid(cmd.Context(), partitions, requests)
			return printBench(cmd, res, err)
		},
	}
	grid.Flags().IntVar(&partitions, "partitions", 1_000_000, "partitions of the benchmark asset")
	grid.Flags().IntVar(&requests, "requests", 30, "page renders to time")
	cmd.AddCommand(grid, newBenchBackfillCmd(), newBenchPagesCmd(), newBenchStalenessCmd(), newBenchLoginCmd(), newBenchMixedCmd(), newBenchAutomationCmd())
	return cmd
}

// printBench prints a benchmark's result as one JSON line, or fails with
// ExitServer when the benchmark failed.
func printBench(cmd *cobra.Command, res any, err error) error {
	if err != nil {
		return &exitError{ExitServer, err}
	}
	return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
}

// openCPUProfile creates the file of --cpuprofile; nil (whose Close is a
// no-op error) when path is "".
func openCPUProfile(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usageErr("--cpuprofile: %v", err)
	}
	return f, nil
}

// checkBackfillBench says which flag of a benchmark that runs one backfill
// (bench backfill, bench mixed) is out of range.
func checkBackfillBench(partitions, chunk int64, conc int, executor string) error {
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
	return nil
}
