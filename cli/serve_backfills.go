package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// engineFlags configure the backfill engine.
type engineFlags struct {
	MaxRuns         int
	LeaseTTL, Grace time.Duration
}

func addEngineFlags(cmd *cobra.Command, f *engineFlags) {
	fs := cmd.Flags()
	fs.IntVar(&f.MaxRuns, "max-concurrent-runs", 0, "global cap on running chunk runs (env TESSERA_MAX_CONCURRENT_RUNS; default 64)")
	fs.DurationVar(&f.LeaseTTL, "lease-ttl", 0, "a running attempt whose server stopped heartbeating this long is interrupted and retried (env TESSERA_LEASE_TTL; default 5s)")
	fs.DurationVar(&f.Grace, "shutdown-grace", 0, "on shutdown, how long active runs may finish before they are interrupted (env TESSERA_SHUTDOWN_GRACE; default 10s)")
}

// startEngine starts the backfill controller for h (flags, else the
// environment: TESSERA_MAX_CONCURRENT_RUNS, TESSERA_LEASE_TTL,
// TESSERA_SHUTDOWN_GRACE). stop stops planning, lets active runs finish
// within the grace period, records the rest as interrupted and returns.
func startEngine(store *db.Store, h *handlers.Handler, log *slog.Logger, baseURL string, fl engineFlags) (stop func(), err error) {
	opts := jobs.Options{BaseURL: baseURL}
	if v := os.Getenv("TESSERA_MAX_CONCURRENT_RUNS"); v != "" && fl.MaxRuns == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, usageErr("TESSERA_MAX_CONCURRENT_RUNS must be a positive number, got %q", v)
		}
		opts.MaxConcurrentRuns = n
	}
	if fl.MaxRuns < 0 || fl.LeaseTTL < 0 || fl.Grace < 0 {
		return nil, usageErr("--max-concurrent-runs, --lease-ttl and --shutdown-grace must be positive")
	}
	if fl.MaxRuns > 0 {
		opts.MaxConcurrentRuns = fl.MaxRuns
	}
	if v := os.Getenv("TESSERA_LEASE_TTL"); v != "" && fl.LeaseTTL == 0 {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, usageErr("TESSERA_LEASE_TTL must be a duration such as 5s, got %q", v)
		}
		opts.LeaseTTL = d
	}
	if fl.LeaseTTL > 0 {
		opts.LeaseTTL = fl.LeaseTTL
	}
	grace := 10 * time.Second
	if v := os.Getenv("TESSERA_SHUTDOWN_GRACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, usageErr("TESSERA_SHUTDOWN_GRACE must be a duration such as 10s, got %q", v)
		}
		grace = d
	}
	if fl.Grace > 0 {
		grace = fl.Grace
	}
	wsf := func() (*catalog.Workspace, map[string]int64) {
		w := h.Workspace()
		return w.Workspace, w.IDs
	}
	opts.ObserveAttempt = h.ObserveAttempt
	eng, err := jobs.NewEngine(context.Background(), store, wsf, log, opts)
	if err != nil {
		return nil, &exitError{ExitServer, fmt.Errorf("start the backfill engine: %w", err)}
	}
	h.Engine = eng
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := eng.Run(ctx, grace); err != nil {
			log.Error("backfill controller stopped", "err", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
