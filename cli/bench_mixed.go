package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/web"
)

func newBenchMixedCmd() *cobra.Command {
	var partitions, chunk int64
	var conc, readers, rounds, readNice int
	var executor, cpuprofile string
	cmd := &cobra.Command{
		Use:   "mixed",
		Short: "Run a backfill alone, then again while concurrent readers request pages and the API; compare",
		Long: `Run a backfill of one hourly asset through the real controller and store in a
temporary database, first alone, then again on a fresh database while
--readers clients request, over real HTTP and as fast as they are answered,
the overview, the asset's grid, the backfill page with its grid and summary
partials, the status board, and the API (the backfill's JSON, the asset's
partitions). Prints one JSON line: the backfill's throughput alone and under
load and their ratio, the reads' p50/p99 by page kind and overall, and the
process's CPU time in each run with the CPU per read it implies (what the
loaded run used beyond the solo one, per read). --rounds N runs the pair N
times, alternating, and reports the medians of the solo and loaded times
and their ratio (a run of 200,000 partitions lasts under a second: one
pair's ratio is noisy), and the reads of every round. With --cpuprofile, the
profile's samples are labelled by page (go tool pprof -tags, or -tagfocus
page=overview) and the engine's part=engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkBackfillBench(partitions, chunk, conc, executor); err != nil {
				return err
			}
			if err := flagBetween("readers", readers, 1, 1000); err != nil {
				return err
			}
			if err := flagBetween("rounds", rounds, 1, 100); err != nil {
				return err
			}
			if err := flagBetween("read-nice", readNice, 0, web.MaxReadNice); err != nil {
				return err
			}
			prof, err := openCPUProfile(cpuprofile)
			if err != nil {
				return err
			}
			defer prof.Close()
			res, err := bench.Mixed(cmd.Context(), partitions, chunk, conc, readers, rounds, readNice, prof)
			return printBench(cmd, res, err)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&partitions, "partitions", 200_000, "partitions of the benchmark asset (all selected)")
	f.Int64Var(&chunk, "chunk-size", 100, "partitions per chunk run")
	f.IntVar(&conc, "concurrency", 100, "max concurrent runs (global and per backfill)")
	f.IntVar(&readers, "readers", 16, "concurrent clients reading pages and the API during the second run")
	f.IntVar(&rounds, "rounds", 5, "solo and loaded runs, alternating: the medians are reported")
	f.IntVar(&readNice, "read-nice", web.DefaultReadNice, "the server's reads run this much lower in priority than the engine, as tessera serve --read-nice; 0 = at the engine's")
	f.StringVar(&executor, "executor", "noop", "executor: noop (returns at once)")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the first run under load to this file")
	return cmd
}
