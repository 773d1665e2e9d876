package web_test

import "github.com/tessera-dev/tessera/auth"

// Route matrix rows of the staleness endpoints (issue 6; web/routes_staleness.go).
func init() {
	for k, v := range map[string]routeExpectation{
		"GET /status":                                                {role: auth.RoleViewer},
		"GET /status.json":                                           {role: auth.RoleViewer},
		"GET /status.csv":                                            {role: auth.RoleViewer},
		"GET /status/:key/badge.svg":                                 {role: auth.RoleViewer, sample: "/status/raw.events/badge.svg"},
		"GET /assets/:key/gaps":                                      {role: auth.RoleViewer, sample: "/assets/raw.events/gaps"},
		"POST /assets/:key/partitions/:partition/taint":              {role: auth.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/taint"},
		"POST /assets/:key/partitions/:partition/clear-taint":        {role: auth.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
		"GET /api/v1/assets/:key/staleness":                          {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/staleness"},
		"GET /api/v1/assets/:key/partitions/:partition/history":      {role: auth.RoleViewer, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/history"},
		"POST /api/v1/assets/:key/partitions/:partition/taint":       {role: auth.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/taint"},
		"POST /api/v1/assets/:key/partitions/:partition/clear-taint": {role: auth.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
		"GET /api/v1/assets/:key/watermark":                          {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/watermark"},
		"POST /api/v1/assets/:key/watermark":                         {role: auth.RoleOperator, sample: "/api/v1/assets/raw.events/watermark"},
		"GET /api/v1/assets/:key/gaps":                               {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/gaps"},
	} {
		routeTable[k] = v
	}
}
