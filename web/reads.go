package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
)

// markReads marks the context of every GET and HEAD request as a read's
// (db.ForRead): a read that took the writer would be counted in
// tessera_db_writer_uses_by_reads_total, which stays 0.
func markReads(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			c.SetRequest(r.WithContext(db.ForRead(r.Context())))
		}
		return next(c)
	}
}
