package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/web"
)

// serveConfig is everything serve reads from flags and the environment.
type serveConfig struct {
	Addr      string
	DB        string
	Workspace string
	Seed      string
	Auth      authFlags
	Engine    engineFlags
}

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Start the dashboard, the API and the scheduler",
		Long: `Start the dashboard, the API and the scheduler.

Without --workspace, Tessera serves its embedded demo workspace and, on an
empty database, seeds believable history so the grid is alive at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Seed != "auto" && cfg.Seed != "always" && cfg.Seed != "never" {
				return usageErr("--seed-demo must be auto, always or never, got %q", cfg.Seed)
			}
			if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
				return usageErr("--addr %q is not HOST:PORT (for example 127.0.0.1:8080): %v", cfg.Addr, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, newLogger(cmd.ErrOrStderr()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", envOr("TESSERA_ADDR", "127.0.0.1:8080"), "listen address HOST:PORT (env TESSERA_ADDR)")
	f.StringVar(&cfg.DB, "db", envOr("TESSERA_DB", "data/tessera.db"), "SQLite database file (env TESSERA_DB)")
	f.StringVar(&cfg.Workspace, "workspace", envOr("TESSERA_WORKSPACE", ""), "workspace YAML file; empty serves the embedded demo workspace (env TESSERA_WORKSPACE)")
	addAuthFlags(cmd, &cfg.Auth)
	addEngineFlags(cmd, &cfg.Engine)
	f.StringVar(&cfg.Seed, "seed-demo", envOr("TESSERA_SEED_DEMO", "auto"), "seed demo history: auto (embedded workspace on an empty database), always, never (env TESSERA_SEED_DEMO)")
	return cmd
}

func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	var ws *catalog.Workspace
	source := "embedded default workspace"
	if cfg.Workspace != "" {
		w, err := loadWorkspaceFile(cfg.Workspace)
		if err != nil {
			return err
		}
		ws, source = w, cfg.Workspace
	} else {
		ws = catalog.DefaultWorkspace()
	}
	store, err := db.Open(cfg.DB)
	if err != nil {
		return &exitError{ExitServer, err}
	}
	defer store.Close()
	now := time.Now()
	loaded, err := handlers.LoadWorkspace(ctx, store, ws, source, "system", now)
	if err != nil {
		return &exitError{ExitServer, fmt.Errorf("sync workspace: %w", err)}
	}
	if cfg.Seed == "always" || (cfg.Seed == "auto" && cfg.Workspace == "") {
		seeded, err := jobs.SeedDemo(ctx, store, loaded.Workspace, loaded.IDs, now)
		if err != nil {
			return &exitError{ExitServer, fmt.Errorf("seed demo history: %w", err)}
		}
		if seeded > 0 {
			log.Info("seeded demo history", "partitions", seeded)
		}
	}
	acfg, err := cfg.Auth.config(cfg.DB)
	if err != nil {
		return err
	}
	if err := ensureFirstAdmin(ctx, store, log, "http://"+cfg.Addr+"/"); err != nil {
		return &exitError{ExitServer, fmt.Errorf("create first admin: %w", err)}
	}
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, acfg)
	stopEngine, err := startEngine(store, h, log, "http://"+cfg.Addr, cfg.Engine)
	if err != nil {
		return err
	}
	e := web.New(h, log)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return &exitError{ExitServer, fmt.Errorf("listen on %s: %w", cfg.Addr, err)}
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	log.Info("tessera listening", "url", "http://"+ln.Addr().String()+"/", "db", cfg.DB, "workspace", source, "assets", len(ws.Assets))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return &exitError{ExitServer, err}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	stopEngine()
	log.Info("stopped")
	return nil
}
