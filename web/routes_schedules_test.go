package web_test

import "github.com/tessera-dev/tessera/auth"

// Route matrix rows of the Automation pages and the schedules API (issue
// 22; web/routes_schedules.go). The default workspace declares the
// schedule raw.events.hourly.
func init() {
	for k, v := range map[string]routeExpectation{
		"GET /automation":                      {role: auth.RoleViewer},
		"GET /schedules/:name":                 {role: auth.RoleViewer, sample: "/schedules/raw.events.hourly"},
		"POST /schedules/:name/:action":        {role: auth.RoleOperator, sample: "/schedules/nope/pause"},
		"GET /api/v1/schedules":                {role: auth.RoleViewer},
		"GET /api/v1/schedules/:name":          {role: auth.RoleViewer, sample: "/api/v1/schedules/raw.events.hourly"},
		"GET /api/v1/schedules/:name/ticks":    {role: auth.RoleViewer, sample: "/api/v1/schedules/raw.events.hourly/ticks"},
		"GET /api/v1/schedules/:name/preview":  {role: auth.RoleViewer, sample: "/api/v1/schedules/nope/preview"},
		"POST /api/v1/schedules/:name/pause":   {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/pause"},
		"POST /api/v1/schedules/:name/resume":  {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/resume"},
		"POST /api/v1/schedules/:name/trigger": {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/trigger"},
	} {
		routeTable[k] = v
	}
}
