package handlers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// A remote engine answers 202 and later reports through the real callback
// route, POST /api/v1/runs/{id}/complete, with its own operator token.
func TestAsyncRunCompletesThroughTheCallbackRoute(t *testing.T) {
	t.Parallel()
	env, remote := testkit.WithAsyncRemote(t)
	tok := env.Token(t, auth.RoleOperator)
	code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills",
		`{"assets":["a.remote"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"chunk_size":3,"max_concurrent_runs":1}`)
	if code != http.StatusCreated {
		t.Fatalf("create %d %v", code, b)
	}
	id := b["id"].(string)
	work := remote.Next(t)
	if n := remote.Pending(); n != 0 {
		t.Fatalf("the remote engine got %d more works, want the one chunk of 3 partitions", n)
	}
	if work.CallbackURL != env.URL+"/api/v1/runs/"+work.RunID+"/complete" || len(work.Partitions) != 3 {
		t.Fatalf("work %+v", work)
	}
	// While the remote works, the run is running and the backfill waits.
	_, run := apiCall(t, env, tok, "GET", "/api/v1/runs/"+work.RunID, "")
	if run["state"] != "running" {
		t.Fatalf("run %v", run)
	}
	// A stale or negative expected_state_version on a running backfill.
	code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/pause", `{"expected_state_version": 1}`)
	if code != http.StatusConflict || e["error"].(map[string]any)["field"] != "expected_state_version" {
		t.Fatalf("stale version on a running backfill: %d %v", code, e)
	}
	code, e = apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/pause", `{"expected_state_version": -2}`)
	if code != http.StatusBadRequest || e["error"].(map[string]any)["field"] != "expected_state_version" {
		t.Fatalf("negative version: %d %v", code, e)
	}
	code, e = apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/pause", `{"expected_state_version": 0}`)
	if code != http.StatusBadRequest || e["error"].(map[string]any)["field"] != "expected_state_version" {
		t.Fatalf("version 0 must be refused, not taken as no check: %d %v", code, e)
	}
	// A partition reported twice, with two statuses, is refused.
	code, e = apiCall(t, env, tok, "POST", "/api/v1/runs/"+work.RunID+"/complete", fmt.Sprintf(
		`{"results":[{"partition":%q,"status":"materialized"},{"partition":%q,"status":"failed"}]}`, work.Partitions[0], work.Partitions[0]))
	if code != http.StatusBadRequest || e["error"].(map[string]any)["field"] != "results[1].partition" ||
		!strings.Contains(e["error"].(map[string]any)["message"].(string), "reported twice") {
		t.Fatalf("a partition reported twice: %d %v", code, e)
	}
	// The callback, as the remote engine sends it: two built, one failed.
	body, _ := json.Marshal(map[string]any{"results": []map[string]any{
		{"partition": work.Partitions[0], "status": "materialized", "metadata": map[string]any{"rows": 10}},
		{"partition": work.Partitions[1], "status": "materialized"},
		{"partition": work.Partitions[2], "status": "failed", "error": "upstream file missing"},
	}})
	req, _ := http.NewRequest(http.MethodPost, work.CallbackURL, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp := testkit.DoNoBody(t, http.DefaultClient, req)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("callback answered %d", resp.StatusCode)
	}
	done := apiWaitState(t, env, tok, id, "SUCCEEDED", "FAILED")
	if parts := done["partitions"].(map[string]any); done["state"] != "FAILED" || parts["materialized"].(float64) != 2 || parts["failed"].(float64) != 1 {
		t.Fatalf("final %v", done)
	}
	_, p := apiCall(t, env, tok, "GET", "/api/v1/assets/a.remote/partitions?status=failed", "")
	parts := p["partitions"].([]any)
	if len(parts) != 1 || !strings.Contains(fmt.Sprint(parts[0]), "upstream file missing") {
		t.Fatalf("failed partitions %v", parts)
	}
	// The same callback again is refused: the run is finished.
	req, _ = http.NewRequest(http.MethodPost, work.CallbackURL, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp = testkit.DoNoBody(t, http.DefaultClient, req)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("second callback answered %d", resp.StatusCode)
	}
}
