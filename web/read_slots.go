package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/handlers"
)

// DefaultReadSlots is how many page and API reads are computed at once when
// Options.ReadSlots is 0: one core fewer than the process may use (at
// least one), so that the backfill engine, which shares the process,
// always has a core while any number of readers wait their turn. (The
// cores as GOMAXPROCS said before read workers raised it: read_priority.go.)
func DefaultReadSlots() int { return max(startProcs-1, 1) }

// readSlots bounds the GET and HEAD requests computed at once to n. A
// crowd of readers (a wall of dashboards, scripts polling in a loop) then
// queues for a slot instead of taking every core from the engine: with 16
// readers reading as fast as they are answered, a backfill ran at 0.2–0.4
// of its speed alone. A read waits for a slot as long as its client does
// (its context). Event streams, which stay open, static files, health
// checks and metrics take no slot. With a pool, a read computes on one of
// its workers, at their lower priority (read_priority.go).
func readSlots(n int, pool *readPool) echo.MiddlewareFunc {
	slots := make(chan struct{}, n)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if (r.Method != http.MethodGet && r.Method != http.MethodHead) || slotFree(r.URL.Path) {
				return next(c)
			}
			select {
			case slots <- struct{}{}:
			case <-r.Context().Done():
				// The client left (or its deadline passed) while waiting.
				return &handlers.UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the server was busy and the request ended before its turn; try again"}
			}
			defer func() { <-slots }()
			if r.Context().Err() != nil {
				// Given a slot just as its client left: no one to answer.
				return &handlers.UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the server was busy and the request ended before its turn; try again"}
			}
			if pool != nil {
				return pool.run(func() error { return next(c) })
			}
			return next(c)
		}
	}
}

// slotFree says whether a GET of path takes no read slot: the event
// streams (held open for as long as a page is), static files, health
// checks and the metrics scrape.
func slotFree(path string) bool {
	return strings.HasSuffix(path, "/stream") || strings.HasPrefix(path, "/static/") ||
		path == "/healthz" || path == "/readyz" || path == MetricsPath || path == "/favicon.ico"
}
