package cli

import (
	"context"
	"fmt"
	"log/slog"
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

// Engine defaults, shown in --help.
const (
	defaultMaxRuns  = 64
	defaultLeaseTTL = 5 * time.Second
	defaultGrace    = 10 * time.Second
)

func addEngineFlags(cmd *cobra.Command, f *engineFlags) {
	fs := cmd.Flags()
	fs.IntVar(&f.MaxRuns, "max-concurrent-runs", defaultMaxRuns, "cap on the chunk runs this instance runs at once, at least 1; several instances on one PostgreSQL database have this many slots each (env TESSERA_MAX_CONCURRENT_RUNS)")
	fs.DurationVar(&f.LeaseTTL, "lease-ttl", defaultLeaseTTL, "a running attempt whose server stopped heartbeating this long is interrupted and retried; more than 0 (env TESSERA_LEASE_TTL)")
	fs.DurationVar(&f.Grace, "shutdown-grace", defaultGrace, "on shutdown, how long active runs may finish before they are interrupted; 0 interrupts them at once (env TESSERA_SHUTDOWN_GRACE)")
}

// engineSettings are the validated engine flags.
type engineSettings struct {
	opts  jobs.Options
	grace time.Duration
}

// settings validates the engine flags, falling back to the environment
// (TESSERA_MAX_CONCURRENT_RUNS, TESSERA_LEASE_TTL, TESSERA_SHUTDOWN_GRACE)
// for a flag not given (changed reports whether a flag was given). A flag
// beats its variable; both are checked the same way.
func (fl engineFlags) settings(changed func(flag string) bool) (engineSettings, error) {
	var s engineSettings
	var err error
	if s.opts.MaxConcurrentRuns, err = positiveInt("max-concurrent-runs", "TESSERA_MAX_CONCURRENT_RUNS").value(changed, fl.MaxRuns); err != nil {
		return s, err
	}
	leaseTTL := durationSetting("lease-ttl", "TESSERA_LEASE_TTL", func(d time.Duration) bool { return d > 0 },
		"a positive duration such as 5s", "a positive duration such as 5s")
	if s.opts.LeaseTTL, err = leaseTTL.value(changed, fl.LeaseTTL); err != nil {
		return s, err
	}
	grace := durationSetting("shutdown-grace", "TESSERA_SHUTDOWN_GRACE", func(d time.Duration) bool { return d >= 0 },
		"a duration such as 10s (0 interrupts active runs at once)", "0 or more")
	s.grace, err = grace.value(changed, fl.Grace)
	return s, err
}

// startEngine starts the backfill controller for h with validated settings.
// stop stops planning, lets active runs finish within the grace period,
// records the rest as interrupted and returns.
func startEngine(store *db.Store, h *handlers.Handler, log *slog.Logger, baseURL string, es engineSettings) (stop func(), err error) {
	opts, grace := es.opts, es.grace
	opts.BaseURL = baseURL
	wsf := func() (*catalog.Workspace, map[string]int64) {
		w := h.Workspace()
		return w.Workspace, w.IDs
	}
	opts.ObserveAttempt = h.ObserveAttempt
	// A workspace that differed from the live instances' when loaded is
	// synced into the catalog once they agree, and not planned before.
	opts.WorkspaceSynced = h.WorkspaceSynced
	opts.SyncWorkspace = h.SyncUnsyncedWorkspace
	eng, err := jobs.NewEngine(context.Background(), store, wsf, log, opts)
	if err != nil {
		return nil, &exitError{ExitServer, fmt.Errorf("start the backfill engine: %w", err)}
	}
	h.Engine = eng
	h.Scheduler = jobs.NewScheduler(eng, log)
	h.Sensors = jobs.NewSensors(eng, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := eng.Run(ctx, grace); err != nil {
			log.Error("backfill controller stopped", "err", err)
		}
	}()
	schedDone, sensDone, linksDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		// The other instances on a PostgreSQL store (nothing on SQLite).
		defer close(linksDone)
		eng.RunInstanceLinks(ctx)
	}()
	go func() {
		defer close(schedDone)
		h.Scheduler.Run(ctx)
	}()
	go func() {
		defer close(sensDone)
		h.Sensors.Run(ctx)
	}()
	return func() { cancel(); <-done; <-schedDone; <-sensDone; <-linksDone }, nil
}
