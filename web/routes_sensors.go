package web

import (
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// sensorRoutes are the sensors' pages and API (issue 22): everyone reads
// them; operators pause, resume, evaluate and push events (a pipeline
// pushes with an API token of the operator role); admins set a cursor.
func sensorRoutes(h *handlers.Handler) []Route {
	return []Route{
		{get, "/sensors", auth.RoleViewer, h.SensorsPage},
		{get, "/sensors/:name", auth.RoleViewer, h.SensorPage},
		{post, "/sensors/:name/cursor", auth.RoleAdmin, h.SensorCursorAction},
		{post, "/sensors/:name/:action", auth.RoleOperator, h.SensorAction},
		{get, "/api/v1/sensors", auth.RoleViewer, h.APISensorList},
		{get, "/api/v1/sensors/:name", auth.RoleViewer, h.APISensorGet},
		{get, "/api/v1/sensors/:name/evaluations", auth.RoleViewer, h.APISensorEvaluations},
		{get, "/api/v1/sensors/:name/events", auth.RoleViewer, h.APISensorEvents},
		{get, "/api/v1/sensors/:name/run-keys", auth.RoleViewer, h.APISensorRunKeys},
		{post, "/api/v1/sensors/:name/events", auth.RoleOperator, h.APISensorPush},
		{post, "/api/v1/sensors/:name/evaluate", auth.RoleOperator, h.APISensorEvaluate},
		{post, "/api/v1/sensors/:name/pause", auth.RoleOperator, h.APISensorPause},
		{post, "/api/v1/sensors/:name/resume", auth.RoleOperator, h.APISensorResume},
		{post, "/api/v1/sensors/:name/cursor", auth.RoleAdmin, h.APISensorCursor},
	}
}
