package handlers

// pageKey is what a shared page model is for: the page (and its resource),
// its query, whether the viewer may operate (the models of viewers and
// operators differ), the workspace it was built from, and the store's
// db.PageVersion. Viewers of the same page share one model for
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
}
