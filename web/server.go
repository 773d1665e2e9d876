package web

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/static"
)

// Options are how the server is assembled beyond its handlers.
type Options struct {
	// MetricsPublic serves /metrics to anyone (TESSERA_METRICS_PUBLIC=true);
	// otherwise it needs the viewer role: a token, a session, or the
	// anonymous viewer mode.
	MetricsPublic bool
	// MetricsElsewhere leaves /metrics off this router: Server.Metrics is
	// served on a listener of its own (--metrics-addr).
	MetricsElsewhere bool
}

// Server is the router and the Prometheus handler of its metrics.
type Server struct {
	Echo *echo.Echo
	// Metrics answers a Prometheus scrape (for a --metrics-addr listener).
	Metrics http.Handler
}

// New builds the router for h, with /metrics for viewers.
func New(h *handlers.Handler, log *slog.Logger) *echo.Echo {
	return NewServer(h, log, Options{}).Echo
}

// NewServer builds the router for h as opt says.
func NewServer(h *handlers.Handler, log *slog.Logger, opt Options) *Server {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(log)
	if h.Auth == nil {
		h.Auth = handlers.NewAuth(h.Store, handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit})
	}
	h.Auth.Log = log
	metrics := NewMetrics(h.Store)
	h.SetAttemptObserver(metrics.ObserveAttempt)

	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently}))
	e.Use(middleware.Recover())
	e.Use(markReads)
	e.Use(requestLog(log))
	e.Use(metrics.Middleware)
	e.Use(middleware.BodyLimit("32M"))
	e.Use(jsonBodies)
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
	}))
	e.Use(hsts(h.Auth))

	e.IPExtractor = clientAddr(h.Auth.Cfg.TrustProxy)
	scrape := promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})
	routes := Routes(h, metrics)
	routes = slices.DeleteFunc(routes, func(r Route) bool { return r.Path == MetricsPath && opt.MetricsElsewhere })
	for i, r := range routes {
		if r.Path == MetricsPath && opt.MetricsPublic {
			routes[i].Role = auth.RolePublic
		}
	}
	// The API document describes the routes, itself included.
	var doc echo.HandlerFunc
	routes = append(routes, Route{http.MethodGet, "/api/v1/openapi.json", auth.RolePublic, func(c echo.Context) error { return doc(c) }})
	doc = openAPIHandler(routes)
	e.Use(staticMethodGuard(routes))
	e.Use(identify(h.Auth))
	e.Use(handlers.DisplayZone)
	e.Use(h.StoreHealth)
	e.Use(csrf(h.Auth, publicUnsafe(routes)))
	for _, r := range routes {
		e.Add(r.Method, r.Path, r.Handler, requireRole(r.Role))
		if r.Method == http.MethodGet {
			// HEAD answers what GET would, without the body (net/http
			// drops it): curl -I, monitors and link checkers.
			e.Add(http.MethodHead, r.Path, r.Handler, requireRole(r.Role))
		}
	}
	e.Any("/api/v1/*", func(c echo.Context) error {
		r := c.Request()
		if allow := allowedMethods(routes, r.URL.Path); len(allow) > 0 {
			if r.Method == http.MethodOptions {
				return options(c, allow)
			}
			return methodNotAllowed(c, allow)
		}
		return handlers.NotFound("no API endpoint %s %s; GET /api/v1/openapi.json lists them", r.Method, r.URL.Path)
	})
	return &Server{Echo: e, Metrics: scrape}
}

// MetricsPath is where Prometheus scrapes.
const MetricsPath = "/metrics"

// Route is one endpoint with the least role that may use it.
type Route struct {
	Method  string
	Path    string
	Role    auth.Role
	Handler echo.HandlerFunc
}

// The methods of the route tables (Routes and its routes_*.go parts).
const (
	get  = http.MethodGet
	post = http.MethodPost
)

// Routes is every endpoint of the server. Add new endpoints here, with their
// role; the route matrix test checks each against every role.
func Routes(h *handlers.Handler, m *Metrics) []Route {
	routes := []Route{
		{get, "/healthz", auth.RolePublic, h.Healthz},
		{get, "/readyz", auth.RolePublic, h.Readyz},
		// Viewers only: the metrics name every asset (Options.MetricsPublic
		// and MetricsElsewhere change that).
		{get, MetricsPath, auth.RoleViewer, echo.WrapHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))},
		{get, "/static/*", auth.RolePublic, echo.WrapHandler(http.StripPrefix("/static/", static.Handler()))},
		{get, "/favicon.ico", auth.RolePublic, favicon},
		{get, "/fault-banner", auth.RolePublic, h.FaultBannerPartial},

		{get, "/login", auth.RolePublic, h.LoginForm},
		{post, "/login", auth.RolePublic, h.Login},
		{post, "/logout", auth.RolePublic, h.Logout},
		{get, "/settings/tokens", auth.RoleViewer, h.Tokens},
		{post, "/settings/tokens", auth.RoleViewer, h.CreateToken},
		{post, "/settings/tokens/:id/revoke", auth.RoleViewer, h.RevokeToken},
		{get, "/settings/password", auth.RoleViewer, h.PasswordForm},
		{post, "/settings/password", auth.RoleViewer, h.ChangePassword},
		{get, "/settings/timezone", auth.RoleViewer, h.TimezoneForm},
		{post, "/settings/timezone", auth.RoleViewer, h.SetTimezone},
		{get, "/admin/users", auth.RoleAdmin, h.AdminUsers},
		{post, "/admin/users", auth.RoleAdmin, h.AdminCreateUser},
		{post, "/admin/users/:id/role", auth.RoleAdmin, h.AdminSetRole},
		{post, "/admin/users/:id/disable", auth.RoleAdmin, h.AdminDisable},
		{post, "/admin/users/:id/enable", auth.RoleAdmin, h.AdminEnable},
		{post, "/admin/users/:id/password", auth.RoleAdmin, h.AdminResetPassword},
		{post, "/admin/users/:id/unlock", auth.RoleAdmin, h.AdminUnlock},
		{post, "/admin/workspace/reload", auth.RoleAdmin, h.AdminReloadWorkspace},
		{get, "/api/v1/me", auth.RoleViewer, h.APIMe},

		{get, "/", auth.RoleViewer, h.Overview},
		{get, "/assets/:key", auth.RoleViewer, h.AssetShow},
		{get, "/assets/:key/partitions/:partition", auth.RoleViewer, h.PartitionShow},
		{get, "/assets/:key/active-backfills", auth.RoleViewer, h.AssetActiveBackfillsPartial},

		// Backfill pages (issue 5).
		{get, "/backfills", auth.RoleViewer, h.BackfillsList},
		{get, "/backfills/new", auth.RoleViewer, h.BackfillNew},
		{post, "/backfills/preview", auth.RoleViewer, h.BackfillPreview},
		{post, "/backfills", auth.RoleOperator, h.BackfillLaunch},
		{get, "/backfills/stream", auth.RoleViewer, h.OverviewStream},
		{get, "/backfills/active", auth.RoleViewer, h.ActiveBackfillsPartial},
		{get, "/backfills/selection", auth.RoleViewer, h.BackfillSelectionCount},
		{get, "/backfills/:id", auth.RoleViewer, h.BackfillShow},
		{get, "/backfills/:id/summary", auth.RoleViewer, h.BackfillSummaryPartial},
		{get, "/backfills/:id/chunks", auth.RoleViewer, h.BackfillChunksPartial},
		{get, "/backfills/:id/grid", auth.RoleViewer, h.BackfillGridPartial},
		{get, "/backfills/:id/events", auth.RoleViewer, h.BackfillEventsPartial},
		{get, "/backfills/:id/actions", auth.RoleViewer, h.BackfillActionsPartial},
		{get, "/backfills/:id/stream", auth.RoleViewer, h.BackfillStream},
		{post, "/backfills/:id/:action", auth.RoleOperator, h.BackfillAction},
		{get, "/runs/:id", auth.RoleViewer, h.RunShow},
		{get, "/runs/:id/live", auth.RoleViewer, h.RunLivePartial},
		{get, "/runs/:id/stream", auth.RoleViewer, h.RunStream},

		{get, "/api/v1/assets", auth.RoleViewer, h.APIAssets},
		{get, "/api/v1/assets/:key/partitions", auth.RoleViewer, h.APIPartitions},
		{post, "/api/v1/assets/:key/partition-keys", auth.RoleOperator, h.APIAddPartitionKeys},
		{post, "/api/v1/materializations", auth.RoleOperator, h.APIReportMaterializations},

		{post, "/api/v1/backfills/preview", auth.RoleViewer, h.APIBackfillPreview},
		{post, "/api/v1/backfills", auth.RoleOperator, h.APIBackfillCreate},
		{get, "/api/v1/backfills", auth.RoleViewer, h.APIBackfillList},
		{get, "/api/v1/backfills/:id", auth.RoleViewer, h.APIBackfillGet},
		{get, "/api/v1/backfills/:id/chunks", auth.RoleViewer, h.APIBackfillChunks},
		{get, "/api/v1/backfills/:id/events", auth.RoleViewer, h.APIBackfillEvents},
		{post, "/api/v1/backfills/:id/pause", auth.RoleOperator, h.APIBackfillPause},
		{post, "/api/v1/backfills/:id/resume", auth.RoleOperator, h.APIBackfillResume},
		{post, "/api/v1/backfills/:id/cancel", auth.RoleOperator, h.APIBackfillCancel},
		{post, "/api/v1/backfills/:id/retry-failed", auth.RoleOperator, h.APIBackfillRetryFailed},
		{get, "/api/v1/runs/:id", auth.RoleViewer, h.APIRunGet},
		{post, "/api/v1/runs/:id/complete", auth.RoleOperator, h.APIRunComplete},
		{get, "/api/v1/conflicts", auth.RoleViewer, h.APIConflicts},
		{get, "/api/v1/status", auth.RoleViewer, h.APIStatus},
		{post, "/api/v1/workspace/reload", auth.RoleAdmin, h.APIWorkspaceReload},
		{get, "/api/v1/users", auth.RoleAdmin, h.APIUsers},
		{post, "/api/v1/users", auth.RoleAdmin, h.APICreateUser},
		{post, "/api/v1/users/:id", auth.RoleAdmin, h.APIUpdateUser},
		{get, "/api/v1/tokens", auth.RoleViewer, h.APITokens},
		{post, "/api/v1/tokens", auth.RoleViewer, h.APICreateToken},
		{post, "/api/v1/tokens/:id/revoke", auth.RoleViewer, h.APIRevokeToken},
	}
	routes = append(routes, scheduleRoutes(h)...) // issue 22: web/routes_schedules.go
	routes = append(routes, sensorRoutes(h)...)   // issue 22: web/routes_sensors.go
	routes = append(routes, lineageRoutes(h)...)  // issue 24: web/routes_lineage.go
	routes = append(routes, runsRoutes(h)...)     // issue 24: web/routes_runs.go
	return append(routes, stalenessRoutes(h)...)  // issue 6: web/routes_staleness.go
}

// favicon sends browsers that ask for /favicon.ico without reading the
// page's <link rel="icon"> (and tools that always ask) to the SVG icon,
// rather than a 404 logged on every visit.
func favicon(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=86400")
	return c.Redirect(http.StatusMovedPermanently, "/static/favicon.svg")
}

func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := answerStatus(c, err)
			log.Info("http", "method", c.Request().Method, "path", c.Request().URL.Path, "route", c.Path(),
				"status", status, "ms", time.Since(start).Milliseconds())
			return err
		}
	}
}

// HSTS is the Strict-Transport-Security header of answers over HTTPS: a
// browser that saw it asks this host over HTTPS only, for a year, its
// subdomains included.
const HSTS = "max-age=31536000; includeSubDomains"

// hsts sends HSTS on requests that came over HTTPS (TLS here, or a trusted
// proxy's X-Forwarded-Proto: https), never over plain HTTP: a browser
// ignores it there, and a man in the middle could forge or strip it anyway.
func hsts(a *handlers.Auth) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if a.HTTPSRequest(c.Request()) {
				c.Response().Header().Set("Strict-Transport-Security", HSTS)
			}
			return next(c)
		}
	}
}

// jsonBodies answers 415 to an API request that carries a body other than
// JSON, rather than decode a form or text as if it were JSON.
func jsonBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !strings.HasPrefix(r.URL.Path, "/api/") || r.ContentLength == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return &handlers.UserError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Message: fmt.Sprintf("the API takes JSON bodies: send Content-Type: application/json (got %q)", ct)}
		}
		return next(c)
	}
}

// allowHeader is the Allow header of a path whose routes have methods: HEAD
// goes with GET, and OPTIONS is always answered.
func allowHeader(methods []string) string {
	all := append(slices.Clone(methods), http.MethodOptions)
	if slices.Contains(methods, http.MethodGet) {
		all = append(all, http.MethodHead)
	}
	slices.Sort(all)
	return strings.Join(slices.Compact(all), ", ")
}

// options answers OPTIONS on a known API path: 204 with its Allow header.
func options(c echo.Context, methods []string) error {
	c.Response().Header().Set("Allow", allowHeader(methods))
	return c.NoContent(http.StatusNoContent)
}

// methodNotAllowed is the 405 for a known API path asked with another
// method.
func methodNotAllowed(c echo.Context, allow []string) error {
	r := c.Request()
	c.Response().Header().Set("Allow", allowHeader(allow))
	return &handlers.UserError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Message: fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))}
}

// staticMethodGuard answers 405 for an API path that is a route without
// parameters asked with a method it lacks. echo would otherwise hand such a
// request to a parameter route of that method (GET /api/v1/backfills/preview
// to GET /api/v1/backfills/:id, "backfill preview not found").
func staticMethodGuard(routes []Route) echo.MiddlewareFunc {
	static := map[string][]string{}
	for _, r := range routes {
		if strings.HasPrefix(r.Path, "/api/") && !strings.ContainsAny(r.Path, ":*") && !slices.Contains(static[r.Path], r.Method) {
			static[r.Path] = append(static[r.Path], r.Method)
		}
	}
	for _, ms := range static {
		slices.Sort(ms)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ms, ok := static[r.URL.Path]
			if !ok || slices.Contains(ms, r.Method) || r.Method == http.MethodHead && slices.Contains(ms, http.MethodGet) {
				return next(c)
			}
			if r.Method == http.MethodOptions {
				return options(c, ms)
			}
			return methodNotAllowed(c, ms)
		}
	}
}

// allowedMethods lists the methods of the routes whose path pattern matches
// path (":name" matches one segment), for a 405's Allow header.
func allowedMethods(routes []Route, path string) []string {
	var out []string
	segs := strings.Split(path, "/")
	for _, r := range routes {
		pat := strings.Split(r.Path, "/")
		if len(pat) != len(segs) || slices.Contains(out, r.Method) {
			continue
		}
		match := true
		for i, p := range pat {
			if strings.HasPrefix(p, ":") && segs[i] == "" || !strings.HasPrefix(p, ":") && p != segs[i] {
				match = false
				break
			}
		}
		if match {
			out = append(out, r.Method)
		}
	}
	slices.Sort(out)
	return out
}
