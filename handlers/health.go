package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/jobs"
)

// Healthz answers while the process is up.
func (h *Handler) Healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Readiness is /readyz's answer.
type Readiness struct {
	Status string `json:"status"`
	// Reason says why the server is not ready (absent when it is).
	Reason string `json:"reason,omitempty"`
	// Database is the store's write state.
	Database *DatabaseHealth `json:"database,omitempty"`
	// CrashRecovery says whether recovery after a crash is whole (absent
	// when no engine runs here). A degraded one leaves the server ready.
	CrashRecovery *CrashRecoveryHealth `json:"crash_recovery,omitempty"`
	// Workspace says how this instance's workspace differs from another
	// instance's on the same database (absent when it does not).
	Workspace *WorkspaceHealth `json:"workspace,omitempty"`
}

// WorkspaceHealth is /readyz's word on an instance whose workspace differs
// from another's: it serves pages but does not plan backfills.
type WorkspaceHealth struct {
	Differs bool `json:"differs"`
	// Instance is the other instance's worker id.
	Instance string `json:"instance"`
	// Assets are the assets defined differently (or on one side only).
	Assets []string `json:"assets"`
}

// CrashRecoveryHealth is /readyz's word on crash recovery.
type CrashRecoveryHealth struct {
	Degraded bool `json:"degraded"`
	// Reason says what a crash would leave behind and how to fix it.
	Reason   string `json:"reason,omitempty"`
	Since    string `json:"since,omitempty"` // RFC 3339: the first attempt whose files could not be written
	Last     string `json:"last,omitempty"`  // RFC 3339: the latest
	Failures int64  `json:"failures,omitempty"`
}

// crashRecoveryHealth words the engine's crash-recovery state.
func crashRecoveryHealth(r jobs.RecoveryHealth) *CrashRecoveryHealth {
	if !r.Degraded {
		return &CrashRecoveryHealth{Failures: r.Failures}
	}
	return &CrashRecoveryHealth{Degraded: true,
		Reason: "command attempts run, but the files crash recovery reads (their process group, their output) cannot be written beside their reports: " +
			"after a crash their processes would keep running and their output would be lost; make the report directory writable (the server log has the error)",
		Since: r.Since.UTC().Format(time.RFC3339), Last: r.Last.UTC().Format(time.RFC3339), Failures: r.Failures}
}

// DatabaseHealth says whether the database can be written.
type DatabaseHealth struct {
	Writable bool   `json:"writable"`
	Cause    string `json:"cause,omitempty"` // disk_full, locked, read_only, io_error
	Since    string `json:"since,omitempty"` // RFC 3339: the first refused write
}

// ReadyzPingTimeout bounds /readyz's query of the database.
var ReadyzPingTimeout = time.Second

// Readyz answers 200 when the database answers a query and can be written,
// 503 with the reason otherwise (also when this instance's workspace
// differs from another's on the same database).
func (h *Handler) Readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), ReadyzPingTimeout)
	defer cancel()
	if err := h.Store.Ping(ctx); err != nil {
		h.Log.Warn("readiness check failed", "err", err)
		return c.JSON(http.StatusServiceUnavailable, Readiness{Status: "database unavailable", Reason: "the database does not answer a query"})
	}
	out := Readiness{Status: "ready", Database: &DatabaseHealth{Writable: true}}
	status := http.StatusOK
	if wh := h.Store.WriteHealth(); wh.Failing {
		status = http.StatusServiceUnavailable
		out.Status, out.Reason = "database cannot be written", storeReason(wh, time.UTC)
		out.Database = &DatabaseHealth{Cause: string(wh.Cause), Since: wh.Since.UTC().Format(time.RFC3339)}
	}
	if h.Engine != nil {
		out.CrashRecovery = crashRecoveryHealth(h.Engine.CrashRecoveryHealth())
		if mm := h.Engine.WorkspaceMismatch(); mm != nil && status == http.StatusOK {
			status = http.StatusServiceUnavailable
			out.Status = "workspace differs from another instance's"
			out.Reason = fmt.Sprintf("this instance's workspace differs from instance %s's in %s: it does not plan backfills until every live instance serves the same --workspace file (after a change, reload each instance; the last to reload plans again)",
				mm.Instance, strings.Join(mm.Assets, ", "))
			out.Workspace = &WorkspaceHealth{Differs: true, Instance: mm.Instance, Assets: mm.Assets}
		}
	}
	return c.JSON(status, out)
}
