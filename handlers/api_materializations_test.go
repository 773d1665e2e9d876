package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestMaterializationsIdempotencyAndBatchRules: an Idempotency-Key replays
// the first answer (its instance ids too), the same key with another batch
// is a 409 that writes nothing, keys are per user; a partition twice in one
// batch with the same run, or metadata that is not portable JSON, is a 400;
// an out-of-order report does not supersede the newer build.
func TestMaterializationsIdempotencyAndBatchRules(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("m.static", "{static: [a, b, c]}"),
	)
	op := env.Token(t, auth.RoleOperator)
	post := func(tok, key, body string) (int, map[string]any) {
		t.Helper()
		if key == "" {
			return apiCall(t, env, tok, "POST", "/api/v1/materializations", body)
		}
		return apiCall(t, env, tok, "POST", "/api/v1/materializations", body, "Idempotency-Key", key)
	}
	a := `[{"asset":"m.static","partition":"a","status":"failed","error":"boom"}]`
	code, first := post(op, "k2", a)
	if code != http.StatusCreated || first["recorded"].(float64) != 1 {
		t.Fatalf("first: %d %v", code, first)
	}
	code, again := post(op, "k2", a)
	if code != http.StatusCreated || again["replayed"].(float64) != 1 || again["recorded"].(float64) != 0 ||
		len(again["instance_ids"].([]any)) != 1 || again["instance_ids"].([]any)[0] != first["instance_ids"].([]any)[0] {
		t.Fatalf("replay: %d %v (first %v)", code, again, first)
	}
	before := apiCountEvents(t, env)
	code, e := post(op, "k2", `[{"asset":"m.static","partition":"b","status":"materialized"}]`)
	if er := e["error"].(map[string]any); code != http.StatusConflict || er["field"] != "Idempotency-Key" || !strings.Contains(er["message"].(string), "different batch") {
		t.Fatalf("same key, other batch: %d %v", code, e)
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("the refused batch wrote %d events", after-before)
	}
	// Another user's k2 is another request.
	other := env.Token(t, auth.RoleOperator)
	if code, res := post(other, "k2", `[{"asset":"m.static","partition":"b","status":"materialized"}]`); code != http.StatusCreated || res["recorded"].(float64) != 1 {
		t.Fatalf("another user's key: %d %v", code, res)
	}
	for _, c := range []struct{ body, field, msg string }{
		{`[{"asset":"m.static","partition":"c","status":"materialized"},{"asset":"m.static","partition":"c","status":"failed"}]`, "materializations[1].partition", "already reported by item 0"},
		{`[{"asset":"m.static","partition":"c","status":"materialized","metadata":{"a":1e999}}]`, "materializations[0].metadata", "not portable JSON"},
		// An error text on a success would be dropped: refused instead.
		{`[{"asset":"m.static","partition":"c","status":"materialized","error":"oops"}]`, "materializations[0].error", `error goes with status "failed"`},
		{`[{"asset":"m.static","partition":"c","status":"failed","error":"bad \u001b[31mrows"}]`, "materializations[0].error", "control character (U+001B at byte 4)"},
	} {
		code, e := post(op, "", c.body)
		er, _ := e["error"].(map[string]any)
		if code != http.StatusBadRequest || er["field"] != c.field || !strings.Contains(er["message"].(string), c.msg) {
			t.Errorf("%s: %d %v", c.body, code, e)
		}
	}
	// Two runs may report the same partition in one batch.
	if code, res := post(op, "", `[{"asset":"m.static","partition":"c","status":"failed","run_id":"r1","at":"2025-01-01T10:00:00Z"},
		{"asset":"m.static","partition":"c","status":"materialized","run_id":"r2","at":"2025-01-01T11:00:00Z"}]`); code != http.StatusCreated || res["recorded"].(float64) != 2 {
		t.Fatalf("two runs of one partition: %d %v", code, res)
	}
	// Out of order: the 21:00 report comes after the 23:10 one.
	post(op, "", `[{"asset":"m.static","partition":"a","status":"materialized","run_id":"new","at":"2025-02-01T23:10:00Z"}]`)
	post(op, "", `[{"asset":"m.static","partition":"a","status":"materialized","run_id":"old","at":"2025-02-01T21:00:00Z"}]`)
	_, h := apiCall(t, env, op, "GET", "/api/v1/assets/m.static/partitions/a/history", "")
	if n := len(h["instances"].([]any)); n != 3 {
		t.Fatalf("%d instances of a, want 3", n)
	}
	for _, in := range h["instances"].([]any) {
		in := in.(map[string]any)
		if in["run_id"] == "old" && in["supersedes_id"] != nil {
			t.Errorf("the older report supersedes %v", in["supersedes_id"])
		}
	}
}

// TestMaterializationsReplayAnswersAnEmptyList: a report that records
// nothing new (the same run reporting again, or that batch replayed by its
// Idempotency-Key) answered "instance_ids": null where the OpenAPI document
// and every other answer have an array; a client iterating it broke.
func TestMaterializationsReplayAnswersAnEmptyList(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("m.static", "{static: [a, b]}"),
	)
	op := env.Token(t, auth.RoleOperator)
	body := `[{"asset":"m.static","partition":"a","status":"materialized","run_id":"r1"}]`
	if code, res := apiCall(t, env, op, "POST", "/api/v1/materializations", body); code != http.StatusCreated || res["recorded"].(float64) != 1 {
		t.Fatalf("first: %d %v", code, res)
	}
	for _, key := range []string{"", "k1", "k1"} { // the same run again; then that answer replayed by its key
		var code int
		var res map[string]any
		if key == "" {
			code, res = apiCall(t, env, op, "POST", "/api/v1/materializations", body)
		} else {
			code, res = apiCall(t, env, op, "POST", "/api/v1/materializations", body, "Idempotency-Key", key)
		}
		ids, ok := res["instance_ids"].([]any)
		if code != http.StatusCreated || res["replayed"].(float64) != 1 || res["recorded"].(float64) != 0 || !ok || len(ids) != 0 {
			t.Fatalf("again (Idempotency-Key %q): %d %v, want instance_ids []", key, code, res)
		}
	}
}
