// Package web assembles the HTTP server: echo, middleware, routes, the error
// mapper, static files and metrics.
package web

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/static"
)

// New builds the router for h.
func New(h *handlers.Handler, log *slog.Logger) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(log)
	metrics := NewMetrics(h.Store)

	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently}))
	e.Use(middleware.Recover())
	e.Use(requestLog(log))
	e.Use(metrics.Middleware)
	e.Use(middleware.BodyLimit("32M"))
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
	}))

	e.GET("/healthz", h.Healthz)
	e.GET("/readyz", h.Readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", static.Handler())))

	e.GET("/", h.Overview)
	e.GET("/assets/:key", h.AssetShow)
	e.GET("/assets/:key/partitions/:partition", h.PartitionShow)

	api := e.Group("/api/v1")
	api.GET("/assets", h.APIAssets)
	api.GET("/assets/:key/partitions", h.APIPartitions)
	api.POST("/assets/:key/partition-keys", h.APIAddPartitionKeys)
	api.POST("/materializations", h.APIReportMaterializations)
	api.Any("/*", func(c echo.Context) error {
		return handlers.NotFound("no API endpoint %s %s", c.Request().Method, c.Request().URL.Path)
	})
	return e
}

func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				if ue := toUserError(err); ue != nil {
					status = ue.Status
				} else {
					status = 500
				}
			}
			log.Info("http", "method", c.Request().Method, "path", c.Request().URL.Path, "route", c.Path(),
				"status", status, "ms", time.Since(start).Milliseconds())
			return err
		}
	}
}
