package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// startEngine starts the backfill controller for h (configuration from the
// environment: TESSERA_MAX_CONCURRENT_RUNS, TESSERA_LEASE_TTL,
// TESSERA_SHUTDOWN_GRACE). stop stops planning, lets active runs finish
// within the grace period, records the rest as interrupted and returns.
func startEngine(store *db.Store, h *handlers.Handler, log *slog.Logger, baseURL string) (stop func(), err error) {
	opts := jobs.Options{BaseURL: baseURL}
	if v := os.Getenv("TESSERA_MAX_CONCURRENT_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, usageErr("TESSERA_MAX_CONCURRENT_RUNS must be a positive number, got %q", v)
		}
		opts.MaxConcurrentRuns = n
	}
	if v := os.Getenv("TESSERA_LEASE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, usageErr("TESSERA_LEASE_TTL must be a duration such as 5s, got %q", v)
		}
		opts.LeaseTTL = d
	}
	grace := 10 * time.Second
	if v := os.Getenv("TESSERA_SHUTDOWN_GRACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, usageErr("TESSERA_SHUTDOWN_GRACE must be a duration such as 10s, got %q", v)
		}
		grace = d
	}
	wsf := func() (*catalog.Workspace, map[string]int64) {
		w := h.Workspace()
		return w.Workspace, w.IDs
	}
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
