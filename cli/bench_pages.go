package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
)

func newBenchPagesCmd() *cobra.Command {
	var partitions, chunks int64
	var requests int
	cmd := &cobra.Command{
		Use:   "pages",
		Short: "Render the backfill page, its grid partial and a chunk table page of a backfill of N partitions in C chunks (half done, some failed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flagBetween("partitions", partitions, 1, 10_000_000); err != nil {
				return err
			}
			if chunks < 1 || chunks > partitions || chunks > 1_000_000 {
				return usageErr("--chunks must be between 1 and min(--partitions, 1000000), got %d", chunks)
			}
			if requests < 1 {
				return usageErr("--requests must be at least 1, got %d", requests)
			}
			res, err := bench.Pages(cmd.Context(), partitions, chunks, requests)
			return printBench(cmd, res, err)
		},
	}
	cmd.Flags().Int64Var(&partitions, "partitions", 1_000_000, "partitions of the benchmark backfill")
	cmd.Flags().Int64Var(&chunks, "chunks", 10_000, "chunks of the benchmark backfill")
	cmd.Flags().IntVar(&requests, "requests", 30, "renders to time per page")
	return cmd
}
