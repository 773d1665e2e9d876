package cli

import (
	"encoding/json"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/catalog"
)

func newBenchAutomationCmd() *cobra.Command {
	var schedules int
	var cron, cpuprofile string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "automation",
		Short: "Run many schedules that fire at the same second through the real scheduler; report tick lag, missed and duplicate ticks",
		Long: `Run --schedules schedules that all fire at the same seconds (--cron, by
default every 10 s) for --duration through the real scheduler, controller
and store in a temporary database, each tick launching a one-partition
backfill on a noop executor. Prints one JSON line: the lag from a tick's
scheduled time to its backfill's creation (p50, p99, max), and the ticks
expected, launched, missed and launched twice. Then 16 clients post 4,000
events to a sensor (one in ten repeats a message id): events per second,
and backfills launched twice (should be 0).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flagBetween("schedules", schedules, 1, 100_000); err != nil {
				return err
			}
			if duration < time.Second || duration > time.Hour {
				return usageErr("--duration must be between 1s and 1h, got %s", duration)
			}
			if _, err := catalog.ParseCron(cron, ""); err != nil {
				return usageErr("--cron: %v", err)
			}
			prof, err := openCPUProfile(cpuprofile)
			if err != nil {
				return err
			}
			defer prof.Close()
			r, err := bench.Automation(cmd.Context(), schedules, cron, duration, prof)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(r)
		},
	}
	cmd.Flags().IntVar(&schedules, "schedules", 1000, "schedules, all with the same cron")
	cmd.Flags().StringVar(&cron, "cron", "*/10 * * * * *", "the schedules' cron (six fields: seconds first)")
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "how long the schedules run")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	return cmd
}
