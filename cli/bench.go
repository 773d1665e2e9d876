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
			if err := flagBetween("partitions", partitions, 1, 10_000_000); err != nil {
				return err
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
	if err := flagBetween("partitions", partitions, 1, 10_000_000); err != nil {
		return err
	}
	if err := flagBetween("chunk-size", chunk, 1, jobs.MaxChunkSize); err != nil {
		return err
	}
	if err := flagBetween("concurrency", conc, 1, jobs.MaxConcurrentRunsCap); err != nil {
		return err
	}
	if executor != "noop" {
		return usageErr("--executor must be noop, got %q", executor)
	}
	return nil
}
