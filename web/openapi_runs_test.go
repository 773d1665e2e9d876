package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/web"
)

// The documented schema of GET /api/v1/runs describes its answer key by key
// (finished and running runs, a page with a cursor), and its parameters
// carry their types.
func TestOpenAPIRunListSchemaMatchesAnswer(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("ok.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}"),
		testkit.Asset("slow.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 1h}}"),
	)
	env.StartEngine(t, jobs.Options{})
	call, answer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleOperator))
	ok := answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["ok.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"}}`)
	answer("POST", "/api/v1/backfills", "/api/v1/backfills", `{"assets":["slow.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"},"max_concurrent_runs":1}`)
	testkit.Eventually(t, 20*time.Second, "a finished run and a running one", func() bool {
		_, fin := call("GET", "/api/v1/runs?state=succeeded", "")
		_, run := call("GET", "/api/v1/runs?state=running", "")
		return len(fin.(map[string]any)["runs"].([]any)) > 0 && len(run.(map[string]any)["runs"].([]any)) > 0
	})
	all := answer("GET", "/api/v1/runs", "/api/v1/runs", "")
	if n := len(all["runs"].([]any)); n < 3 {
		t.Errorf("%d runs", n)
	}
	page := answer("GET", "/api/v1/runs?limit=1&backfill="+fmt.Sprint(ok["id"]), "/api/v1/runs", "")
	if page["next_cursor"] == "" {
		t.Errorf("a page of 1 of 3 runs has no next_cursor: %v", page)
	}

	doc := web.OpenAPI(nil)
	op := doc["paths"].(map[string]map[string]any)["/api/v1/runs"]["get"].(map[string]any)
	params := map[string]map[string]any{}
	for _, p := range op["parameters"].([]any) {
		p := p.(map[string]any)
		params[p["name"].(string)] = p
	}
	for _, name := range []string{"asset", "state", "backfill", "from", "to", "limit", "cursor"} {
		if params[name] == nil || params[name]["description"] == nil {
			t.Errorf("?%s is not documented: %v", name, params[name])
		}
	}
	if s := params["limit"]["schema"].(map[string]any); s["maximum"] != handlers.MaxRunsPageLimit || s["default"] != handlers.DefaultRunsPageLimit {
		t.Errorf("?limit %v", s)
	}
	if s := params["state"]["schema"].(map[string]any); s["type"] != "array" || params["state"]["explode"] != false {
		t.Errorf("?state %v", params["state"])
	}
}
