package web

import (
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// lineageRoutes are the whole workspace's lineage graph (issue 24, item 5):
// a page of its own, and the part the overview loads into itself.
func lineageRoutes(h *handlers.Handler) []Route {
	return []Route{
		{get, "/lineage", auth.RoleViewer, h.Lineage},
	}
}
