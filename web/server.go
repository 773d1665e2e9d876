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
	// ReadSlots bounds the page and API reads computed at once (read_slots.go);
	// 0 is DefaultReadSlots.
	ReadSlots int
	// ReadNice lowers the priority of the threads those reads compute on by
	// this nice increment (read_priority.go; tessera serve uses
	// DefaultReadNice); 0 computes them where they arrive, at the
	// process's priority.
	ReadNice int
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

	// A trailing slash: GET and HEAD are sent to the path without it (one
	// address per page); any other method is served there, since clients
	// that follow a 301 send a POST again as a GET (a create would
	// "succeed" with the list).
	safe := func(c echo.Context) bool { m := c.Request().Method; return m == http.MethodGet || m == http.MethodHead }
	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently,
		Skipper: func(c echo.Context) bool { return !safe(c) }}))
	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{Skipper: safe}))
	e.Use(middleware.Recover())
	e.Use(markReads)
	slots := opt.ReadSlots
	if slots <= 0 {
		slots = DefaultReadSlots()
	}
	var pool *readPool
	if opt.ReadNice > 0 {
		var err error
		if pool, err = readPoolFor(min(opt.ReadNice, MaxReadNice), slots); err != nil {
			log.Warn("reads run at the engine's priority: their threads' could not be lowered", "err", err)
		}
	}
	e.Use(readSlots(slots, pool))
	e.Use(requestLog(log))
	e.Use(metrics.Middleware)
	e.Use(middleware.BodyLimit(maxBody))
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

// maxBody is the largest request body the server reads (echo's units: M
// is MiB); a larger one is a 413 (see toUserError).
const maxBody = "32M"

// MetricsPath is where Prometheus scrapes.
const MetricsPath = "/metrics"

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
