package web_test

import "github.com/tessera-dev/tessera/auth"

// Route matrix rows of the sensors' pages and API (issue 22;
// web/routes_sensors.go). The default workspace declares the push sensor
// crm.account_changed; the mutations are checked on an unknown sensor, so
// that an allowed role meets a 404 and writes nothing.
func init() {
	for k, v := range map[string]routeExpectation{
		"GET /sensors":                          {role: auth.RoleViewer},
		"GET /sensors/:name":                    {role: auth.RoleViewer, sample: "/sensors/crm.account_changed"},
		"POST /sensors/:name/cursor":            {role: auth.RoleAdmin, sample: "/sensors/nope/cursor"},
		"POST /sensors/:name/:action":           {role: auth.RoleOperator, sample: "/sensors/nope/pause"},
		"GET /api/v1/sensors":                   {role: auth.RoleViewer},
		"GET /api/v1/sensors/:name":             {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed"},
		"GET /api/v1/sensors/:name/evaluations": {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/evaluations"},
		"GET /api/v1/sensors/:name/events":      {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/events"},
		"GET /api/v1/sensors/:name/run-keys":    {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/run-keys"},
		"POST /api/v1/sensors/:name/events":     {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/events"},
		"POST /api/v1/sensors/:name/evaluate":   {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/evaluate"},
		"POST /api/v1/sensors/:name/pause":      {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/pause"},
		"POST /api/v1/sensors/:name/resume":     {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/resume"},
		"POST /api/v1/sensors/:name/cursor":     {role: auth.RoleAdmin, sample: "/api/v1/sensors/nope/cursor"},
	} {
		routeTable[k] = v
	}
}
