package web

import (
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// stalenessRoutes are the staleness, taint, history, watermark, gaps and
// status board endpoints (issue 6). The status board, its badges and
// exports need the viewer role, which anonymous visitors have when
// TESSERA_ANONYMOUS_VIEWER=true.
func stalenessRoutes(h *handlers.Handler) []Route {
	return []Route{
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
