package web_test

import "github.com/tessera-dev/tessera/handlers"

// Route matrix rows of the staleness endpoints (issue 6; web/routes_staleness.go).
func init() {
	for k, v := range map[string]routeExpectation{
		"GET /status":                                                {role: handlers.RoleViewer},
		"GET /status.json":                                           {role: handlers.RoleViewer},
		"GET /status.csv":                                            {role: handlers.RoleViewer},
		"GET /status/:key/badge.svg":                                 {role: handlers.RoleViewer, sample: "/status/raw.events/badge.svg"},
		"GET /assets/:key/gaps":                                      {role: handlers.RoleViewer, sample: "/assets/raw.events/gaps"},
		"POST /assets/:key/partitions/:partition/taint":              {role: handlers.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/taint"},
		"POST /assets/:key/partitions/:partition/clear-taint":        {role: handlers.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
		"GET /api/v1/assets/:key/staleness":                          {role: handlers.RoleViewer, sample: "/api/v1/assets/raw.events/staleness"},
		"GET /api/v1/assets/:key/partitions/:partition/history":      {role: handlers.RoleViewer, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/history"},
		"POST /api/v1/assets/:key/partitions/:partition/taint":       {role: handlers.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/taint"},
		"POST /api/v1/assets/:key/partitions/:partition/clear-taint": {role: handlers.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
		"GET /api/v1/assets/:key/watermark":                          {role: handlers.RoleViewer, sample: "/api/v1/assets/raw.events/watermark"},
		"POST /api/v1/assets/:key/watermark":                         {role: handlers.RoleOperator, sample: "/api/v1/assets/raw.events/watermark"},
		"GET /api/v1/assets/:key/gaps":                               {role: handlers.RoleViewer, sample: "/api/v1/assets/raw.events/gaps"},
	} {
		routeTable[k] = v
	}
}
