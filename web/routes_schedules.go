package web

import (
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// scheduleRoutes are the Automation pages and the schedules API (issue 22):
// everyone reads them, operators pause, resume and run schedules now.
func scheduleRoutes(h *handlers.Handler) []Route {
	return []Route{
		{get, "/automation", auth.RoleViewer, h.AutomationPage},
		{get, "/schedules/:name", auth.RoleViewer, h.SchedulePage},
		{post, "/schedules/:name/:action", auth.RoleOperator, h.ScheduleAction},
		{get, "/api/v1/schedules", auth.RoleViewer, h.APIScheduleList},
		{get, "/api/v1/schedules/:name", auth.RoleViewer, h.APIScheduleGet},
		{get, "/api/v1/schedules/:name/ticks", auth.RoleViewer, h.APIScheduleTicks},
		{get, "/api/v1/schedules/:name/preview", auth.RoleViewer, h.APISchedulePreview},
		{post, "/api/v1/schedules/:name/pause", auth.RoleOperator, h.APISchedulePause},
		{post, "/api/v1/schedules/:name/resume", auth.RoleOperator, h.APIScheduleResume},
		{post, "/api/v1/schedules/:name/trigger", auth.RoleOperator, h.APIScheduleTrigger},
	}
}
