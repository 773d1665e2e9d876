package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
)

func newBenchStalenessCmd() *cobra.Command {
	var big, chains, per, requests, batch int
	var cpuprofile string
	cmd := &cobra.Command{
		Use:   "staleness",
		Short: "Time the status board, one asset's staleness view and /status.json on 200 assets / 2,000,000 status rows",
		Long: `Builds a temporary database: one hourly asset of --big partitions (reading a
daily upstream), and --chains chains of three assets (daily raw → daily
aggregate → monthly rollup, --per partitions per daily asset) with mixed code
versions, upstream changes, failures, taints and holes. Then times, through
the real HTTP handlers, /status, /assets/<big>?view=staleness (and, warm,
its status view /assets/<big>) and
/status.json: warm (memoized facts, nothing written in between), "full
cold" (an event of unknown effect is appended before each request: every
asset's memoized facts are checked against the store, by the generations of
its persisted staleness blocks, and recomputed), after a write to one asset
(only that asset and its downstreams are recomputed), after a batch of
--batch partitions of the big asset (what a backfill running at full speed
writes between two page views), and after a restart (the first request of a
new store and server on the same database file, after those writes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if big < 1 || chains < 1 || per < 1 || requests < 1 || batch < 1 || batch > 10_000 {
				return usageErr("--big, --chains, --per and --requests must be positive, --batch 1-10000")
			}
			prof, err := openCPUProfile(cpuprofile)
			if err != nil {
				return err
			}
			defer prof.Close()
			res, err := bench.Staleness(cmd.Context(), big, chains, per, requests, batch, prof)
			return printBench(cmd, res, err)
		},
	}
	cmd.Flags().IntVar(&big, "big", 1_000_000, "partitions of the big hourly asset")
	cmd.Flags().IntVar(&chains, "chains", 66, "chains of three assets (raw, aggregate, monthly)")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the timed requests to this file")
	cmd.Flags().IntVar(&per, "per", 8000, "partitions of each daily asset of a chain")
	cmd.Flags().IntVar(&requests, "requests", 20, "requests to time per figure")
	cmd.Flags().IntVar(&batch, "batch", 10_000, "partitions of the big asset written before each request of the after-batch figure")
	return cmd
}
