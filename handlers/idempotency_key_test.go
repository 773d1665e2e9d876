package handlers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// An Idempotency-Key header sent empty (a script's unset variable) or more
// than once is a 400 naming the header, on every endpoint that takes one:
// read as "no key", a retried request would be done twice, and of two keys
// one would be dropped silently. Nothing is written.
func TestIdempotencyKeyEmptyOrRepeatedIsRefused(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	parent := apiCreate(t, env, tok, `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"}}`)["id"].(string)
	// The parent's own run writes events: let it end before counting.
	apiWaitState(t, env, tok, parent, "SUCCEEDED", "FAILED")
	endpoints := []struct{ tok, path, body string }{
		{tok, "/api/v1/backfills", `{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"}}`},
		{tok, "/api/v1/materializations", `{"asset":"a.daily","partition":"2025-01-03","status":"materialized"}`},
		{tok, "/api/v1/backfills/" + parent + "/retry-failed", ``},
		{admin, "/api/v1/users", `{"name":"idem-user","role":"viewer","password":"correct horse battery"}`},
		{admin, "/api/v1/tokens", `{"name":"idem-token"}`},
	}
	for _, ep := range endpoints {
		for _, tc := range []struct {
			name   string
			values []string
			want   string
		}{
			{"empty", []string{""}, "the Idempotency-Key header is empty"},
			{"blank", []string{"   "}, "the Idempotency-Key header is empty"},
			{"twice", []string{"k-1", "k-2"}, "Idempotency-Key header is sent 2 times"},
		} {
			before := apiCountEvents(t, env)
			req, err := http.NewRequest("POST", env.URL+ep.path, strings.NewReader(ep.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+ep.tok)
			req.Header.Set("Content-Type", "application/json")
			req.Header["Idempotency-Key"] = tc.values
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var out apiError
			_ = json.Unmarshal(b, &out)
			if resp.StatusCode != http.StatusBadRequest || out.Error.Field != "Idempotency-Key" || !strings.Contains(out.Error.Message, tc.want) {
				t.Errorf("%s %s: %d %s, want 400 on Idempotency-Key saying %q", ep.path, tc.name, resp.StatusCode, b, tc.want)
			}
			if after := apiCountEvents(t, env); after != before {
				t.Errorf("%s %s: wrote %d events", ep.path, tc.name, after-before)
			}
		}
	}
}
