package cli

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/db"
)

// maxBenchInstances bounds --instances of bench backfill.
const maxBenchInstances = 16

func newBenchBackfillCmd() *cobra.Command {
	var partitions, chunk int64
	var conc, instances int
	var executor, cpuprofile, dbValue string
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Run a whole backfill through the real controller and store in a temporary database",
		Long: `Run a whole backfill of one hourly asset through the real controller and store
in a temporary database, and measure in the same process the raw ceiling:
batched upserts (1,000 rows per transaction) of the same status rows into a
bare SQLite table. Prints one JSON line.

With --db postgres://… the backfill runs on that PostgreSQL database (give
it an empty one: the benchmark writes its asset and backfill there), and
with --instances N it is shared by N engines in this process, each with its
own connections and --concurrency slots, as N tessera serve instances on
one database would be; the backfill's own cap is then concurrency × N.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkBackfillBench(partitions, chunk, conc, "noop"); err != nil {
				return err
			}
			sleep, err := benchExecutor(executor)
			if err != nil {
				return err
			}
			o := bench.BackfillOptions{Partitions: partitions, ChunkSize: chunk, Concurrency: conc, Instances: instances, Sleep: sleep}
			if o.DB, err = benchDB(cmd.Flags().Changed("db"), dbValue, instances); err != nil {
				return err
			}
			prof, err := openCPUProfile(cpuprofile)
			if err != nil {
				return err
			}
			defer prof.Close()
			res, err := bench.Backfill(cmd.Context(), o, prof)
			var inUse *bench.ErrDatabaseInUse
			if errors.As(err, &inUse) {
				return usageErr("--db: %v", err)
			}
			return printBench(cmd, res, err)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&partitions, "partitions", 1_000_000, "partitions of the benchmark asset (all selected)")
	f.Int64Var(&chunk, "chunk-size", 100, "partitions per chunk run")
	f.IntVar(&conc, "concurrency", 100, "max concurrent runs of each instance (and of the backfill, times --instances)")
	f.StringVar(&executor, "executor", "noop", "executor: noop (returns at once) or sleep:DURATION (each chunk sleeps that long, e.g. sleep:50ms)")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the backfill (not the raw ceiling) to this file")
	f.StringVar(&dbValue, "db", "", "run on this database instead of a temporary SQLite file: a PostgreSQL URL postgres://user:password@host:5432/dbname of an empty database")
	f.IntVar(&instances, "instances", 1, "engines sharing the backfill on the one database, each with its own connections and --concurrency slots (more than 1 needs --db postgres://…)")
	return cmd
}

// benchExecutor reads --executor: noop (0) or sleep:DURATION.
func benchExecutor(v string) (time.Duration, error) {
	if v == "noop" {
		return 0, nil
	}
	if d, ok := strings.CutPrefix(v, "sleep:"); ok {
		s, err := time.ParseDuration(d)
		if err != nil || s <= 0 || s > time.Hour {
			return 0, usageErr("--executor sleep:DURATION needs a duration between 1ns and 1h such as sleep:50ms, got %q", v)
		}
		return s, nil
	}
	return 0, usageErr("--executor must be noop or sleep:DURATION (such as sleep:50ms), got %q", v)
}

// benchDB reads bench backfill's --db (given: whether it was) against
// --instances: "" is a temporary SQLite file; several instances need
// PostgreSQL.
func benchDB(given bool, value string, instances int) (string, error) {
	if err := flagBetween("instances", instances, 1, maxBenchInstances); err != nil {
		return "", err
	}
	if !given {
		if instances > 1 {
			return "", usageErr("--instances %d needs --db postgres://…: instances share the work through PostgreSQL (a temporary SQLite file has one writer)", instances)
		}
		return "", nil
	}
	if strings.TrimSpace(value) == "" {
		// dbLocation's wording offers a SQLite file, which this command
		// refuses: say what it takes.
		return "", usageErr("--db of bench backfill is empty: give a PostgreSQL URL (postgres://user@host:5432/dbname), or leave --db out to run on a temporary SQLite file")
	}
	loc, err := dbLocation(value)
	if err != nil {
		return "", err
	}
	if loc.Dialect != db.Postgres {
		return "", usageErr("--db of bench backfill must be a PostgreSQL URL (postgres://user@host:5432/dbname), got %q; without --db it runs on a temporary SQLite file", value)
	}
	return loc.URL, nil
}
