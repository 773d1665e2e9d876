package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/static"
)

// Route is one endpoint with the least role that may use it.
type Route struct {
	Method  string
	Path    string
	Role    auth.Role
	Handler echo.HandlerFunc
}

// The methods of the route table.
const (
	get  = http.MethodGet
	post = http.MethodPost
)

// Routes is every endpoint of the server. Add new endpoints here, with their
// role; the route matrix test checks each against every role.
func Routes(h *handlers.Handler, m *Metrics) []Route {
	return []Route{
		{get, "/healthz", auth.RolePublic, h.Healthz},
		{get, "/readyz", auth.RolePublic, h.Readyz},
		// Viewers only: the metrics name every asset (Options.MetricsPublic
		// and MetricsElsewhere change that).
		{get, MetricsPath, auth.RoleViewer, echo.WrapHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))},
		{get, "/static/*", auth.RolePublic, echo.WrapHandler(http.StripPrefix("/static/", static.Handler()))},
		{get, "/favicon.ico", auth.RolePublic, favicon},
		{get, "/fault-banner", auth.RolePublic, h.FaultBannerPartial},

		{get, "/login", auth.RolePublic, h.LoginForm},
		{post, "/login", auth.RolePublic, h.Login},
		{post, "/logout", auth.RolePublic, h.Logout},
		{get, "/settings/tokens", auth.RoleViewer, h.Tokens},
		{post, "/settings/tokens", auth.RoleViewer, h.CreateToken},
		{post, "/settings/tokens/:id/revoke", auth.RoleViewer, h.RevokeToken},
		{get, "/settings/password", auth.RoleViewer, h.PasswordForm},
		{post, "/settings/password", auth.RoleViewer, h.ChangePassword},
		{get, "/settings/timezone", auth.RoleViewer, h.TimezoneForm},
		{post, "/settings/timezone", auth.RoleViewer, h.SetTimezone},
		{get, "/admin/users", auth.RoleAdmin, h.AdminUsers},
		{post, "/admin/users", auth.RoleAdmin, h.AdminCreateUser},
		{post, "/admin/users/:id/role", auth.RoleAdmin, h.AdminSetRole},
		{post, "/admin/users/:id/disable", auth.RoleAdmin, h.AdminDisable},
		{post, "/admin/users/:id/enable", auth.RoleAdmin, h.AdminEnable},
		{post, "/admin/users/:id/password", auth.RoleAdmin, h.AdminResetPassword},
		{post, "/admin/users/:id/unlock", auth.RoleAdmin, h.AdminUnlock},
		{post, "/admin/workspace/reload", auth.RoleAdmin, h.AdminReloadWorkspace},
		{get, "/api/v1/me", auth.RoleViewer, h.APIMe},

		{get, "/", auth.RoleViewer, h.Overview},
		{get, "/assets/:key", auth.RoleViewer, h.AssetShow},
		{get, "/assets/:key/partitions/:partition", auth.RoleViewer, h.PartitionShow},
		{get, "/assets/:key/active-backfills", auth.RoleViewer, h.AssetActiveBackfillsPartial},

		// Backfill pages (issue 5).
		{get, "/backfills", auth.RoleViewer, h.BackfillsList},
		{get, "/backfills/new", auth.RoleViewer, h.BackfillNew},
		{post, "/backfills/preview", auth.RoleViewer, h.BackfillPreview},
		{post, "/backfills", auth.RoleOperator, h.BackfillLaunch},
		{get, "/backfills/stream", auth.RoleViewer, h.OverviewStream},
		{get, "/backfills/active", auth.RoleViewer, h.ActiveBackfillsPartial},
		{get, "/backfills/selection", auth.RoleViewer, h.BackfillSelectionCount},
		{get, "/backfills/:id", auth.RoleViewer, h.BackfillShow},
		{get, "/backfills/:id/summary", auth.RoleViewer, h.BackfillSummaryPartial},
		{get, "/backfills/:id/chunks", auth.RoleViewer, h.BackfillChunksPartial},
		{get, "/backfills/:id/grid", auth.RoleViewer, h.BackfillGridPartial},
		{get, "/backfills/:id/events", auth.RoleViewer, h.BackfillEventsPartial},
		{get, "/backfills/:id/actions", auth.RoleViewer, h.BackfillActionsPartial},
		{get, "/backfills/:id/stream", auth.RoleViewer, h.BackfillStream},
		{post, "/backfills/:id/:action", auth.RoleOperator, h.BackfillAction},
		{get, "/runs/:id", auth.RoleViewer, h.RunShow},
		{get, "/runs/:id/live", auth.RoleViewer, h.RunLivePartial},
		{get, "/runs/:id/stream", auth.RoleViewer, h.RunStream},

		{get, "/api/v1/assets", auth.RoleViewer, h.APIAssets},
		{get, "/api/v1/assets/:key/partitions", auth.RoleViewer, h.APIPartitions},
		{post, "/api/v1/assets/:key/partition-keys", auth.RoleOperator, h.APIAddPartitionKeys},
		{post, "/api/v1/materializations", auth.RoleOperator, h.APIReportMaterializations},

		{post, "/api/v1/backfills/preview", auth.RoleViewer, h.APIBackfillPreview},
		{post, "/api/v1/backfills", auth.RoleOperator, h.APIBackfillCreate},
		{get, "/api/v1/backfills", auth.RoleViewer, h.APIBackfillList},
		{get, "/api/v1/backfills/:id", auth.RoleViewer, h.APIBackfillGet},
		{get, "/api/v1/backfills/:id/chunks", auth.RoleViewer, h.APIBackfillChunks},
		{get, "/api/v1/backfills/:id/events", auth.RoleViewer, h.APIBackfillEvents},
		{post, "/api/v1/backfills/:id/pause", auth.RoleOperator, h.APIBackfillPause},
		{post, "/api/v1/backfills/:id/resume", auth.RoleOperator, h.APIBackfillResume},
		{post, "/api/v1/backfills/:id/cancel", auth.RoleOperator, h.APIBackfillCancel},
		{post, "/api/v1/backfills/:id/retry-failed", auth.RoleOperator, h.APIBackfillRetryFailed},
		{get, "/api/v1/runs/:id", auth.RoleViewer, h.APIRunGet},
		{post, "/api/v1/runs/:id/complete", auth.RoleOperator, h.APIRunComplete},
		{get, "/api/v1/conflicts", auth.RoleViewer, h.APIConflicts},
		{get, "/api/v1/status", auth.RoleViewer, h.APIStatus},
		{post, "/api/v1/workspace/reload", auth.RoleAdmin, h.APIWorkspaceReload},
		{get, "/api/v1/users", auth.RoleAdmin, h.APIUsers},
		{post, "/api/v1/users", auth.RoleAdmin, h.APICreateUser},
		{post, "/api/v1/users/:id", auth.RoleAdmin, h.APIUpdateUser},
		{get, "/api/v1/tokens", auth.RoleViewer, h.APITokens},
		{post, "/api/v1/tokens", auth.RoleViewer, h.APICreateToken},
		{post, "/api/v1/tokens/:id/revoke", auth.RoleViewer, h.APIRevokeToken},

		// The Automation pages and the schedules API (issue 22): everyone
		// reads them, operators pause, resume and run schedules now.
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

		// The sensors' pages and API (issue 22): everyone reads them;
		// operators pause, resume, evaluate and push events (a pipeline
		// pushes with an API token of the operator role); admins set a
		// cursor.
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

		// The whole workspace's lineage graph (issue 24, item 5): a page of
		// its own, and the part the overview loads into itself.
		{get, "/lineage", auth.RoleViewer, h.Lineage},

		// The runs list of every backfill (issue 24, item 6): the page and
		// its API, for viewers.
		{get, "/runs", auth.RoleViewer, h.RunsList},
		{get, "/api/v1/runs", auth.RoleViewer, h.APIRunList},
		{get, "/backfills/:id/gantt", auth.RoleViewer, h.BackfillGanttPartial},

		// The staleness, taint, history, watermark, gaps and
		// status board endpoints (issue 6). The status board, its badges and
		// exports need the viewer role, which anonymous visitors have when
		// TESSERA_ANONYMOUS_VIEWER=true.
		{get, "/status", auth.RoleViewer, h.StatusBoard},
		{get, "/status.json", auth.RoleViewer, h.StatusJSON},
		{get, "/status.csv", auth.RoleViewer, h.StatusCSV},
		{get, "/status/:key/badge.svg", auth.RoleViewer, h.StatusBadge},
		{get, "/assets/:key/gaps", auth.RoleViewer, h.AssetGaps},
		{post, "/assets/:key/partitions/:partition/taint", auth.RoleAdmin, h.TaintPartition},
		{post, "/assets/:key/partitions/:partition/clear-taint", auth.RoleAdmin, h.ClearTaint},
		{get, "/api/v1/assets/:key/staleness", auth.RoleViewer, h.APIAssetStaleness},
		{get, "/api/v1/assets/:key/partitions/:partition/history", auth.RoleViewer, h.APIPartitionHistory},
		{post, "/api/v1/assets/:key/partitions/:partition/taint", auth.RoleAdmin, h.TaintPartition},
		{post, "/api/v1/assets/:key/partitions/:partition/clear-taint", auth.RoleAdmin, h.ClearTaint},
		{get, "/api/v1/assets/:key/watermark", auth.RoleViewer, h.APIGetWatermark},
		{post, "/api/v1/assets/:key/watermark", auth.RoleOperator, h.APISetWatermark},
		{get, "/api/v1/assets/:key/gaps", auth.RoleViewer, h.APIGaps},
	}
}
