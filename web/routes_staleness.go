package web

import (
	"net/http"

	"github.com/tessera-dev/tessera/handlers"
)

// stalenessRoutes are the staleness, taint, history, watermark, gaps and
// status board endpoints (issue 6). The status board, its badges and
// exports need the viewer role, which anonymous visitors have when
// TESSERA_ANONYMOUS_VIEWER=true.
func stalenessRoutes(h *handlers.Handler) []Route {
	const (
		get  = http.MethodGet
		post = http.MethodPost
	)
	return []Route{
		{get, "/status", handlers.RoleViewer, h.StatusBoard},
		{get, "/status.json", handlers.RoleViewer, h.StatusJSON},
		{get, "/status.csv", handlers.RoleViewer, h.StatusCSV},
		{get, "/status/:key/badge.svg", handlers.RoleViewer, h.StatusBadge},
		{get, "/assets/:key/gaps", handlers.RoleViewer, h.AssetGaps},
		{post, "/assets/:key/partitions/:partition/taint", handlers.RoleAdmin, h.TaintPartition},
		{post, "/assets/:key/partitions/:partition/clear-taint", handlers.RoleAdmin, h.ClearTaint},
		{get, "/api/v1/assets/:key/staleness", handlers.RoleViewer, h.APIAssetStaleness},
		{get, "/api/v1/assets/:key/partitions/:partition/history", handlers.RoleViewer, h.APIPartitionHistory},
		{post, "/api/v1/assets/:key/partitions/:partition/taint", handlers.RoleAdmin, h.TaintPartition},
		{post, "/api/v1/assets/:key/partitions/:partition/clear-taint", handlers.RoleAdmin, h.ClearTaint},
		{get, "/api/v1/assets/:key/watermark", handlers.RoleViewer, h.APIGetWatermark},
		{post, "/api/v1/assets/:key/watermark", handlers.RoleOperator, h.APISetWatermark},
		{get, "/api/v1/assets/:key/gaps", handlers.RoleViewer, h.APIGaps},
	}
}
