package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
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
			if err != nil {
				return &exitError{ExitServer, err}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	grid.Flags().IntVar(&partitions, "partitions", 1_000_000, "partitions of the benchmark asset")
	grid.Flags().IntVar(&requests, "requests", 30, "page renders to time")
	cmd.AddCommand(grid, newBenchBackfillCmd(), newBenchPagesCmd(), newBenchStalenessCmd(), newBenchLoginCmd(), newBenchMixedCmd(), newBenchAutomationCmd())
	return cmd
}
