package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// Pause and resume take expected_state_version only: an unknown field is a
// 400 that lists what they take (not cancel's terminate), and terminate,
// cancel's field, is refused as one they do not take; cancel lists both.
func TestSteerBodiesListTheFieldsEachTakes(t *testing.T) {
	t.Parallel()
	env, tok := apiBFEnv(t)
	code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"}}`)
	id, _ := b["id"].(string)
	if code != http.StatusCreated || id == "" {
		t.Fatalf("create: %d %v", code, b)
	}
	for _, c := range []struct{ action, body, field, says string }{
		{"pause", `{"x": 1}`, "x", `unknown field "x"; the fields there are expected_state_version`},
		{"resume", `{"x": 1}`, "x", `unknown field "x"; the fields there are expected_state_version`},
		{"pause", `{"terminate": true}`, "terminate", `unknown field "terminate"; the fields there are expected_state_version`},
		{"resume", `{"terminate": true}`, "terminate", `unknown field "terminate"; the fields there are expected_state_version`},
		{"cancel", `{"x": 1}`, "x", `unknown field "x"; the fields there are expected_state_version, terminate`},
	} {
		code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/"+c.action, c.body)
		er, _ := e["error"].(map[string]any)
		msg, _ := er["message"].(string)
		if code != http.StatusBadRequest || er["field"] != c.field || !strings.HasSuffix(msg, c.says) {
			t.Errorf("%s %s: %d %v, want 400 on %s ending %q", c.action, c.body, code, e, c.field, c.says)
		}
	}
	// Nothing was steered: neither paused nor canceled.
	if _, b := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+id, ""); b["state"] == "PAUSED" || b["state"] == "CANCELING" || b["state"] == "CANCELED" {
		t.Errorf("a refused body steered the backfill: %v", b["state"])
	}
}
