package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tessera-dev/tessera/db"
)

// Metrics is the server's Prometheus registry.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	attempts *prometheus.HistogramVec
}

// NewMetrics registers HTTP, backfill, database pool and write-fault, Go and
// process metrics.
func NewMetrics(store *db.Store) *Metrics {
	reg := prometheus.NewRegistry()
	writer, readers := store.Pools()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tessera_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
	}
	m.attempts = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tessera_attempt_duration_seconds", Help: "Duration of finished chunk-run attempts by asset and outcome.",
		Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200},
	}, []string{"asset", "state"})
	reg.MustRegister(m.requests, m.duration, m.attempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(writer, "writer"), collectors.NewDBStatsCollector(readers, "readers"),
		newBackfillCollector(store), newStoreCollector(store))
	return m
}

// ObserveAttempt records a finished attempt (the engine's AttemptObserver).
func (m *Metrics) ObserveAttempt(asset, state string, d time.Duration) {
	m.attempts.WithLabelValues(asset, state).Observe(d.Seconds())
}

// Middleware counts requests by route pattern (not raw path, so cardinality
// stays bounded).
func (m *Metrics) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		code := answerStatus(c, err)
		method := methodLabel(c.Request().Method)
		m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return err
	}
}

// methodLabel bounds the method label: any client may send any method name,
// and each would otherwise be a new series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}
