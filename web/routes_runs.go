package web

import (
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// runsRoutes are the runs list of every backfill (issue 24, item 6): the
// page and its API, for viewers.
func runsRoutes(h *handlers.Handler) []Route {
	return []Route{
		{get, "/runs", auth.RoleViewer, h.RunsList},
		{get, "/api/v1/runs", auth.RoleViewer, h.APIRunList},
		{get, "/backfills/:id/gantt", auth.RoleViewer, h.BackfillGanttPartial},
	}
}
