package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
)

func newBenchLoginCmd() *cobra.Command {
	var concurrency, requests, slots int
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Storm /login with concurrent sign-ins for unknown names from distinct addresses; report memory, latency and answers",
		Long: `Starts the real server on a temporary database (behind a trusted proxy, so
that every request comes from an address of its own, as a botnet's would),
then sends --requests sign-ins for names that do not exist, --concurrency at
a time, and one sign-in of a real user in the middle of it. Prints one JSON
line: peak resident memory, sign-in latency p50/p99, and the count of
answers by HTTP status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flagBetween("concurrency", concurrency, 1, 10_000); err != nil {
				return err
			}
			if requests == 0 {
				requests = concurrency
			}
			if requests < concurrency {
				return usageErr("--requests (%d) must be at least --concurrency (%d)", requests, concurrency)
			}
			if slots < 0 {
				return usageErr("--hash-slots must be 0 (sized from memory) or more, got %d", slots)
			}
			res, err := bench.Login(cmd.Context(), concurrency, requests, slots)
			return printBench(cmd, res, err)
		},
	}
	cmd.Flags().IntVar(&concurrency, "concurrency", 200, "sign-ins in flight at once")
	cmd.Flags().IntVar(&requests, "requests", 0, "sign-ins in all (default: --concurrency)")
	cmd.Flags().IntVar(&slots, "hash-slots", 0, "password checks allowed at once (0: what serve would choose on this machine)")
	return cmd
}
