package handlers_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/handlers"
)

// Every 404 of the API says what was not found and how to find the valid
// ids (the store's own text, `backfill "bf_nope": not found`, said neither).
func TestAPINotFoundSaysWhereToLook(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	const backfills = "list backfills with GET /api/v1/backfills"
	cases := []struct {
		method, path, tok string
		want              []string
	}{
		{"GET", "/api/v1/backfills/bf_nope", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/backfills/bf_nope/chunks", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/backfills/bf_nope/events", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/pause", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/resume", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/cancel", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/retry-failed", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/runs/run_nope", tok, []string{`run "run_nope" not found`, "GET /api/v1/backfills/{id}/chunks", backfills}},
		{"POST", "/api/v1/runs/run_nope/complete", tok, []string{`run "run_nope" not found`, "GET /api/v1/backfills/{id}/chunks"}},
		{"GET", "/api/v1/assets/nope/partitions", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/staleness", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/watermark", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/gaps", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/partitions/2025-01-01/history", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/a.daily/partitions/1999-01-01/history", tok, []string{`"1999-01-01"`, "GET /api/v1/assets/a.daily/partitions lists its partitions"}},
		{"POST", "/api/v1/assets/a.daily/partitions/1999-01-01/taint", admin, []string{`"1999-01-01"`, "GET /api/v1/assets/a.daily/partitions lists its partitions"}},
		{"GET", "/api/v1/assets/a.daily/watermark", tok, []string{"has no watermark", "/api/v1/assets/a.daily/watermark"}},
		{"POST", "/api/v1/users/999", admin, []string{`no user with id "999"`, "GET /api/v1/users lists the accounts"}},
		{"POST", "/api/v1/users/bob", admin, []string{`no user with id "bob"`, "GET /api/v1/users lists the accounts"}},
		{"GET", "/api/v1/tokens?user=nobody", admin, []string{`no user "nobody"`, "GET /api/v1/users lists the accounts"}},
		{"POST", "/api/v1/tokens/999/revoke", tok, []string{"no token 999", "GET /api/v1/tokens lists your tokens"}},
		{"POST", "/api/v1/tokens/x/revoke", tok, []string{`no token "x"`, "GET /api/v1/tokens lists your tokens"}},
		{"GET", "/api/v1/nope", tok, []string{"no API endpoint GET /api/v1/nope", "GET /api/v1/openapi.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			body := ""
			if strings.HasSuffix(tc.path, "/taint") {
				body = `{"reason":"bad data"}`
			}
			code, out := apiCall(t, env, tc.tok, tc.method, tc.path, body)
			e, _ := out["error"].(map[string]any)
			if code != http.StatusNotFound || e["code"] != "not_found" {
				t.Fatalf("%d %v, want 404 not_found", code, out)
			}
			msg, _ := e["message"].(string)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// A page keeps its own text: the backfill page of an unknown id says where
// to look among pages, not API endpoints.
func TestPageNotFoundPointsAtPages(t *testing.T) {
	env, _ := apiBFEnv(t)
	c := env.Client(t, handlers.RoleViewer)
	resp, err := c.Get(env.URL + "/backfills/bf_nope")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, "the Backfills page lists every backfill") || strings.Contains(page, "/api/v1/") {
		t.Fatalf("%d %s", resp.StatusCode, page)
	}
}

// A reused Idempotency-Key with another body is a 409 that says how to fix
// it: a new key for a new request, or the original body again.
func TestIdempotencyKeyReusedSaysHowToFix(t *testing.T) {
	env, tok := apiBFEnv(t)
	code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", apiFeb, "Idempotency-Key", "feb")
	if code != http.StatusCreated {
		t.Fatalf("create %d %v", code, b)
	}
	code, out := apiCall(t, env, tok, "POST", "/api/v1/backfills", strings.Replace(apiFeb, `"chunk_size":7`, `"chunk_size":8`, 1), "Idempotency-Key", "feb")
	e, _ := out["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if code != http.StatusConflict || e["field"] != "Idempotency-Key" || !strings.Contains(msg, b["id"].(string)) ||
		!strings.Contains(msg, "send a new Idempotency-Key for a new request") || !strings.Contains(msg, "repeat the original body") {
		t.Fatalf("%d %v", code, out)
	}
	mat := `{"asset":"a.daily","partition":"2025-01-01","status":"materialized"}`
	if code, out := apiCall(t, env, tok, "POST", "/api/v1/materializations", mat, "Idempotency-Key", "m1"); code != http.StatusCreated {
		t.Fatalf("report %d %v", code, out)
	}
	code, out = apiCall(t, env, tok, "POST", "/api/v1/materializations", strings.Replace(mat, "01-01", "01-02", 1), "Idempotency-Key", "m1")
	e, _ = out["error"].(map[string]any)
	msg, _ = e["message"].(string)
	if code != http.StatusConflict || !strings.Contains(msg, "send a new Idempotency-Key for a new batch") || !strings.Contains(msg, "repeat the original batch") {
		t.Fatalf("%d %v", code, out)
	}
}
