package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/demo"
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
	TLS       tlsFlags
	Auth      authFlags
	Engine    engineFlags
	Metrics   metricsFlags
	Streams   streamFlags
	Auto      automationFlags
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
			set, err := cfg.settings(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			log, err := newLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, set, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", envOr("TESSERA_ADDR", "127.0.0.1:8080"), "listen address HOST:PORT (env TESSERA_ADDR)")
	f.StringVar(&cfg.DB, "db", envOr("TESSERA_DB", "data/tessera.db"), dbFlagUsage)
	f.StringVar(&cfg.Workspace, "workspace", envOr("TESSERA_WORKSPACE", ""), "workspace YAML file; empty serves the embedded demo workspace (env TESSERA_WORKSPACE)")
	addTLSFlags(cmd, &cfg.TLS)
	addAuthFlags(cmd, &cfg.Auth)
	addEngineFlags(cmd, &cfg.Engine)
	addMetricsFlags(cmd, &cfg.Metrics)
	addStreamFlags(cmd, &cfg.Streams)
	addAutomationFlags(cmd, &cfg.Auto)
	f.StringVar(&cfg.Seed, "seed-demo", envOr("TESSERA_SEED_DEMO", "auto"), "seed demo history: auto (embedded workspace on an empty database), always, never (env TESSERA_SEED_DEMO)")
	return cmd
}

// serveSettings are serve's validated settings.
type serveSettings struct {
	db      db.Location
	ws      *catalog.Workspace
	source  string
	auth    handlers.AuthConfig
	engine  engineSettings
	certs   *certStore // nil: plain HTTP
	web     web.Options
	streams streamSettings
}

// settings checks every flag and environment setting, and reads the
// workspace file, without creating anything: a mistake is reported before
// the database, the session key file or the first admin exist.
func (cfg serveConfig) settings(changed func(flag string) bool) (serveSettings, error) {
	var s serveSettings
	if cfg.Seed != "auto" && cfg.Seed != "always" && cfg.Seed != "never" {
		return s, usageErr("--seed-demo must be auto, always or never, got %q", cfg.Seed)
	}
	if err := checkListenAddr("--addr", cfg.Addr); err != nil {
		return s, err
	}
	var err error
	if s.db, err = dbLocation(cfg.DB); err != nil {
		return s, err
	}
	if s.web, err = cfg.Metrics.settings(cfg.Addr); err != nil {
		return s, err
	}
	if s.streams, err = cfg.Streams.settings(changed); err != nil {
		return s, err
	}
	s.web.ReadSlots, s.web.ReadNice = s.streams.readSlots, s.streams.readNice
	if s.certs, err = cfg.TLS.settings(); err != nil {
		return s, err
	}
	if s.auth, err = cfg.Auth.settings(); err != nil {
		return s, err
	}
	if s.db.Dialect == db.Postgres && len(s.auth.SessionKeys) == 0 {
		// A SQLite store keeps its generated key in a file beside the
		// database; instances sharing a PostgreSQL database share theirs
		// through their configuration.
		return s, usageErr("with a PostgreSQL --db, set TESSERA_SESSION_KEYS (the same keys on every instance, 16 characters or more): sessions signed by one instance are read by the others")
	}
	if s.engine, err = cfg.Engine.settings(changed); err != nil {
		return s, err
	}
	if s.engine.opts.AutomationRetention, err = cfg.Auto.retention(changed); err != nil {
		return s, err
	}
	s.ws, s.source = catalog.DefaultWorkspace(), "embedded default workspace"
	if cfg.Workspace != "" {
		if s.ws, err = loadWorkspaceFile(cfg.Workspace); err != nil {
			return s, err
		}
		s.source = cfg.Workspace
	}
	return s, nil
}

// checkListenAddr refuses a listen address (flag name) that can never be
// listened on.
func checkListenAddr(name, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("%s %q is not HOST:PORT (for example 127.0.0.1:8080): %v", name, addr, err)
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		return usageErr("%s %q: port %d is not between 0 and 65535", name, addr, n)
	}
	return nil
}

// listen binds addr (of the flag name). An address that cannot be
// resolved or parsed is a usage error; one that is taken or not allowed is
// a server error.
func listen(name, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	var ae *net.AddrError
	var de *net.DNSError
	if errors.As(err, &ae) || (errors.As(err, &de) && !de.IsTimeout && !de.IsTemporary) {
		return nil, usageErr("%s %q: %v", name, addr, err)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &exitError{ExitServer, fmt.Errorf("listen on %s: %w (another server is using this port; choose another with %s)", addr, err, name)}
	}
	return nil, &exitError{ExitServer, fmt.Errorf("listen on %s: %w", addr, err)}
}

// serve binds the port first, then opens the database and starts the
// engine; the first admin (whose password is printed once) is created last,
// so a start that fails never consumes that one-time password.
func serve(ctx context.Context, cfg serveConfig, set serveSettings, log *slog.Logger) error {
	ln, err := listen("--addr", cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var metricsLn net.Listener
	if cfg.Metrics.Addr != "" {
		if metricsLn, err = listen("--metrics-addr", cfg.Metrics.Addr); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	ws, source := set.ws, set.source
	store, err := openLocation(set.db)
	if err != nil {
		return err
	}
	defer store.Close()
	now := time.Now()
	// Before anything is written: an instance whose session keys cannot
	// read the live instances' cookies (or theirs its own) does not start.
	owner := jobs.NewWorkerID()
	recorded, err := recordSessionKeys(ctx, store, owner, set.auth.SessionKeys, set.engine.opts.LeaseTTL, now)
	if err != nil {
		return err
	}
	if recorded {
		defer func() {
			if err := forgetSessionKeys(store, owner); err != nil {
				log.Warn("session keys' record not deleted; it stops counting once this instance's heartbeat expires", "err", err)
			}
		}()
	}
	set.engine.opts.Owner = owner
	loaded, seeded, err := loadServeWorkspace(ctx, store, cfg, set, log, now)
	if err != nil {
		return err
	}
	acfg := set.auth
	if err := loadSessionKey(&acfg, cfg.DB); err != nil {
		return err
	}
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, acfg)
	h.MaxStreams, h.MaxStreamsPerUser = set.streams.total, set.streams.perUser
	scheme := "http://"
	if set.certs != nil {
		scheme = "https://"
	}
	stopEngine, err := startEngine(store, h, log, scheme+cfg.Addr, set.engine)
	if err != nil {
		return err
	}
	h.Engine.Broker().SetMax(set.streams.total)
	if seeded {
		launchDemoBackfills(ctx, h.Engine, loaded.Workspace, log)
	}
	if err := ensureFirstAdmin(ctx, store, log, scheme+cfg.Addr+"/"); err != nil {
		stopEngine()
		return &exitError{ExitServer, fmt.Errorf("create first admin: %w", err)}
	}
	built := web.NewServer(h, log, set.web)
	srv := &http.Server{Handler: built.Echo, ReadHeaderTimeout: 10 * time.Second}
	log.Info("tessera listening", "url", scheme+ln.Addr().String()+"/", "db", set.db.Redacted(), "workspace", source, "assets", len(ws.Assets), "instance", owner)
	errc := make(chan error, 1)
	if set.certs != nil {
		// HTTPS and HTTP/2 (negotiated by ServeTLS); the certificate is
		// read from certs on each handshake, so SIGHUP can replace it.
		srv.TLSConfig = set.certs.config()
		log.Info("serving HTTPS and HTTP/2", "cert", set.certs.cert, "expires", set.certs.expires().UTC().Format(time.RFC3339))
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	var metricsSrv *http.Server
	if metricsLn != nil {
		metricsSrv = serveMetrics(metricsLn, built.Metrics, errc)
		log.Info("serving metrics", "url", "http://"+metricsLn.Addr().String()+web.MetricsPath)
	}
	warmStalenessInBackground(ctx, h, ws, log)
	// SIGHUP reloads the workspace file, like POST /api/v1/workspace/reload.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := serveUntilDone(ctx, h, set, log, errc, hup, stopEngine); err != nil {
		return err
	}
	shutdownServers(srv, metricsSrv, stopEngine, log)
	return nil
}

// loadServeWorkspace refuses a workspace that would strand unfinished
// backfills, syncs it into the store and seeds the demo history if asked
// (seeded: it did, on an empty database).
func loadServeWorkspace(ctx context.Context, store *db.Store, cfg serveConfig, set serveSettings, log *slog.Logger, now time.Time) (_ *handlers.Workspace, seeded bool, _ error) {
	ws, source := set.ws, set.source
	// Before anything of it is written: a workspace that differs from the
	// live instances' is served as it is, without syncing it into the
	// shared catalog (the engine does not plan, and refuses backfills,
	// until they agree).
	mm, err := jobs.CompareWorkspace(ctx, store, ws, set.engine.opts.LeaseTTL)
	if err != nil {
		return nil, false, &exitError{ExitServer, fmt.Errorf("compare the workspace with the other instances': %w", err)}
	}
	if mm != nil {
		log.Error("workspace differs from another instance's; not syncing it into the shared catalog, not planning",
			"instance", mm.Instance, "assets", strings.Join(mm.Assets, ","), "err", mm.Error())
		ids, err := store.AssetIDs(ctx)
		if err != nil {
			return nil, false, &exitError{ExitServer, err}
		}
		return &handlers.Workspace{Workspace: ws, Source: source, IDs: ids, Path: cfg.Workspace, Unsynced: true, Differs: mm}, false, nil
	}
	if err := handlers.CheckUnfinishedBackfills(ctx, store, ws); err != nil {
		var ue *handlers.UserError
		if errors.As(err, &ue) {
			return nil, false, usageErr("workspace %s was not loaded: %s (start with the previous workspace to do that)", source, ue.Message)
		}
		return nil, false, &exitError{ExitServer, err}
	}
	loaded, err := handlers.LoadWorkspace(ctx, store, ws, source, "system", now)
	if err != nil {
		return nil, false, &exitError{ExitServer, fmt.Errorf("sync workspace: %w", err)}
	}
	loaded.Path = cfg.Workspace // what a reload (API, SIGHUP) reads again
	if cfg.Seed == "always" || (cfg.Seed == "auto" && cfg.Workspace == "") {
		n, err := demo.Seed(ctx, store, loaded.Workspace, loaded.IDs, now)
		if err != nil {
			return nil, false, &exitError{ExitServer, fmt.Errorf("seed demo history: %w", err)}
		}
		if n > 0 {
			log.Info("seeded demo history", "partitions", n)
			seeded = true
		}
	}
	return loaded, seeded, nil
}

// warmStalenessInBackground loads the staleness facts in the background, so
// the first pages after a start are not the ones to load them (0.6–1.6 s on
// a million partitions).
func warmStalenessInBackground(ctx context.Context, h *handlers.Handler, ws *catalog.Workspace, log *slog.Logger) {
	go func() {
		start := time.Now()
		if err := h.WarmStaleness(ctx); err != nil {
			if ctx.Err() == nil {
				log.Warn("staleness facts not preloaded", "err", err)
			}
			return
		}
		log.Info("staleness facts preloaded", "assets", len(ws.Assets), "duration", time.Since(start).Round(time.Millisecond).String())
	}()
}

// serveUntilDone waits for ctx to end, reloading the workspace (and the TLS
// certificate) on each SIGHUP; a server that stops serving stops the engine
// and is the error returned.
func serveUntilDone(ctx context.Context, h *handlers.Handler, set serveSettings, log *slog.Logger, errc <-chan error, hup <-chan os.Signal, stopEngine func()) error {
	for {
		select {
		case err := <-errc:
			stopEngine()
			return &exitError{ExitServer, err}
		case <-hup:
			if _, err := h.ReloadWorkspace(ctx, "signal"); err != nil {
				log.Error("workspace not reloaded", "err", err)
			}
			if set.certs != nil {
				if err := set.certs.reload(); err != nil {
					log.Error("TLS certificate not reloaded; the previous one is still served", "err", err)
				} else {
					log.Info("TLS certificate reloaded", "expires", set.certs.expires().UTC().Format(time.RFC3339))
				}
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// shutdownServers gives the servers 15 s to finish their requests, then
// stops the engine.
func shutdownServers(srv, metricsSrv *http.Server, stopEngine func(), log *slog.Logger) {
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(sctx)
	}
	stopEngine()
	log.Info("stopped")
}
