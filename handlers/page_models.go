package handlers

import (
	"time"

	"github.com/tessera-dev/tessera/db"
)

// pageKey is what a shared page model is for: the page (and its resource),
// its query, whether the viewer may operate (the models of viewers and
// operators differ), the workspace it was built from, the store's
// db.PageVersion, and the handler's clock (Handler.Now) in steps of
// db.PageStaleLag (a clock set by a test shows its time at once). Viewers of the same page share one model for
// db.PageStaleLag (Handler.pageModels): a running backfill's progress shows
// on it at most that late, any other change (a report, a taint, a new or
// ended backfill, a reloaded workspace) at once. What differs per request
// (the signed-in user, the CSRF token) is not in the model but in the
// page's header, rendered for each request.
type pageKey struct {
	page, query string
	operate     bool
	ws          *Workspace
	version     int64
	at          int64
}

// pageStep is the step of the clock in pageKey.at.
func pageStep(now time.Time) int64 { return now.UnixMilli() / db.PageStaleLag.Milliseconds() }
