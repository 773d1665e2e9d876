package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestIdempotencyKeyNotUTF8: an Idempotency-Key header holding a byte that
// is not UTF-8 is a 400 naming the header, on every endpoint that takes
// one, and writes nothing.
func TestIdempotencyKeyNotUTF8(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("k.static", "{static: [a, b]}"),
		testkit.Asset("k.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}"),
	)
	env.StartEngine(t, jobs.Options{})
	admin := env.AdminToken()
	before := apiCountEvents(t, env)
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/tokens", `{"name":"idem"}`},
		{"/api/v1/users", `{"name":"idem-user","role":"viewer","password":"a long enough password 1"}`},
		{"/api/v1/materializations", `[{"asset":"k.static","partition":"a","status":"materialized"}]`},
		{"/api/v1/backfills", `{"assets":["k.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"}}`},
	} {
		code, out := apiCall(t, env, admin, "POST", tc.path, tc.body, "Idempotency-Key", "key-\xff-1")
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["field"] != "Idempotency-Key" || !strings.Contains(msg, "not valid UTF-8") || !strings.Contains(msg, "0xff") {
			t.Errorf("POST %s with Idempotency-Key holding 0xff: HTTP %d %v, want 400 on Idempotency-Key saying it is not valid UTF-8", tc.path, code, out)
		}
	}
	if n := apiCountEvents(t, env); n != before {
		t.Errorf("requests with a bad Idempotency-Key wrote %d events", n-before)
	}
}
