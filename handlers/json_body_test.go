package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// A body that is not valid JSON is a 400 that says where: a syntax error
// gives the byte offset, line and column and the text near it; a body that
// ends early says it is truncated and what is still open; a value of the
// wrong type names its field and the type to send; data after the value is
// placed too. Nothing is written.
func TestMalformedJSONBodySaysWhere(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	cases := []struct {
		name, tok, path, body, field string
		want                         []string
	}{
		{"truncated object", tok, "/api/v1/backfills", `{"assets":["a.daily"],"selector":{"type":"range"`, "",
			[]string{"the body ended early, after 48 bytes", "truncated",
				"the { opened at byte offset 33 (line 1, column 34) is not closed with }",
				"the { opened at byte offset 0 (line 1, column 1) is not closed with }",
				`check that every {, [ and " is closed`}},
		{"truncated inside a string", tok, "/api/v1/backfills", "{\n  \"assets\": [\"a.da", "",
			[]string{"the body ended early", "the string opened at byte offset 15 (line 2, column 14) is not closed with \"",
				"the [ opened at byte offset 14 (line 2, column 13) is not closed with ]"}},
		{"stray comma", tok, "/api/v1/backfills", "{\n  \"assets\": [\"a.daily\"],\n  \"chunk_size\": 1,,\n  \"max_concurrent_runs\": 1\n}", "",
			[]string{"malformed JSON at byte offset 45 (line 3, column 19)", `near "nk_size\": 1,,\n  \"max_con"`, "invalid character ','"}},
		{"leading blank lines count", tok, "/api/v1/backfills", "\n\n{\"assets\" [\"a.daily\"]}", "",
			[]string{"malformed JSON at byte offset 12 (line 3, column 11)", "invalid character '['"}},
		{"wrong type", tok, "/api/v1/backfills", `{"assets":["a.daily"],"selector":{"type":"range"},"chunk_size":"7","max_concurrent_runs":1}`, "chunk_size",
			[]string{"chunk_size must be an integer, not a JSON string"}},
		{"trailing data", tok, "/api/v1/backfills", "{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"range\"},\"chunk_size\":1,\"max_concurrent_runs\":1}\n}", "",
			[]string{"unexpected data after the JSON value at byte offset 90 (line 2, column 1)", "send exactly one JSON value"}},
		{"materializations truncated", tok, "/api/v1/materializations", `[{"asset":"a.daily","partition":"2025-01-01"`, "",
			[]string{"the body ended early", "the { opened at byte offset 1 (line 1, column 2)", "the [ opened at byte offset 0 (line 1, column 1) is not closed with ]"}},
		{"materializations syntax", tok, "/api/v1/materializations", `{"asset":"a.daily" "partition":"2025-01-01"}`, "",
			[]string{"malformed JSON at byte offset 19 (line 1, column 20)", "invalid character '\"' after object key:value pair"}},
		{"materializations trailing data", tok, "/api/v1/materializations", `{"asset":"a.daily","partition":"2025-01-01","status":"materialized"} x`, "",
			[]string{"unexpected data after the JSON value at byte offset 69 (line 1, column 70)"}},
		{"taint truncated", admin, "/api/v1/assets/a.daily/partitions/2025-01-01/taint", `{"reason":"bad rows"`, "",
			[]string{"the body ended early, after 20 bytes", "the { opened at byte offset 0 (line 1, column 1) is not closed with }"}},
		{"taint empty", admin, "/api/v1/assets/a.daily/partitions/2025-01-01/taint", ``, "",
			[]string{"the request body is empty", `send a JSON object like {"reason": "..."}`}},
	}
	before := apiCountEvents(t, env)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := apiCall(t, env, tc.tok, "POST", tc.path, tc.body)
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != http.StatusBadRequest || e["code"] != "invalid" || e["field"] != nilIfEmpty(tc.field) {
				t.Fatalf("%d %v, want 400 invalid on field %q", code, out, tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "unexpected EOF") {
				t.Errorf("message %q still says only unexpected EOF", msg)
			}
		})
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("bad bodies wrote %d events", after-before)
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	if n := len(list["backfills"].([]any)); n != 0 {
		t.Fatalf("bad bodies created %d backfills", n)
	}
}

// The partition-keys endpoint places a malformed body the same way, and
// still shows the body to send.
func TestPartitionKeysMalformedJSONSaysWhere(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	tok := env.Token(t, auth.RoleOperator)
	for body, want := range map[string][]string{
		`{"keys":["p-1",`:    {"the body ended early", "the [ opened at byte offset 8 (line 1, column 9) is not closed with ]", `send {"keys": ["key-a", "key-b"]}`},
		`{"keys":["p-1" 2]}`: {"malformed JSON at byte offset 15 (line 1, column 16)", `send {"keys": ["key-a", "key-b"]}`},
		`{"keys":"p-1"}`:     {"keys must be an array, not a JSON string"},
	} {
		code, out := apiCall(t, env, tok, "POST", "/api/v1/assets/partners.feeds/partition-keys", body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest {
			t.Fatalf("%s: %d %v", body, code, out)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", body, msg, w)
			}
		}
	}
	var n int
	if err := env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM dynamic_partitions`); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("bad bodies added %d keys", n)
	}
}

// A report array names a field in another case, or twice, by its path, and
// records nothing.
func TestMaterializationsExactFieldNames(t *testing.T) {
	env, tok := apiBFEnv(t)
	before := apiCountEvents(t, env)
	for body, want := range map[string]string{
		`[{"asset":"a.daily","partition":"2025-01-01","status":"materialized","Partition":"2025-01-02"}]`:                                                                                    `unknown field "materializations[0].Partition" (field names are case-sensitive)`,
		`[{"asset":"a.daily","partition":"2025-01-01","status":"materialized","partition":"2025-01-02"}]`:                                                                                    `field "materializations[0].partition" appears more than once`,
		`{"materializations":[{"asset":"a.daily","partition":"2025-01-01","status":"materialized"},{"asset":"a.daily","asset":"a.daily","partition":"2025-01-02","status":"materialized"}]}`: `field "materializations[1].asset" appears more than once`,
	} {
		code, out := apiCall(t, env, tok, "POST", "/api/v1/materializations", body)
		e, _ := out["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %q, want 400 saying %q", body, code, msg, want)
		}
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("refused reports wrote %d events", after-before)
	}
}

// The taint, clear-taint and watermark endpoints read their bodies as
// strictly as every other endpoint: a field they do not take (a typo, a
// field of another endpoint) is a 400 that names it and lists the fields
// there, in the same shape, and nothing is written. A body too big for a
// reason is refused by the reason's limit, not with the HTTP library's
// words.
func TestTaintAndWatermarkBodiesAreStrict(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	if code, out := apiCall(t, env, tok, "POST", "/api/v1/materializations", `{"asset":"a.daily","partition":"2025-01-01","status":"materialized"}`); code != http.StatusCreated {
		t.Fatalf("report: %d %v", code, out)
	}
	taint := "/api/v1/assets/a.daily/partitions/2025-01-01/taint"
	clear := "/api/v1/assets/a.daily/partitions/2025-01-01/clear-taint"
	watermark := "/api/v1/assets/a.daily/watermark"
	counts := func() (taints, watermarks int) {
		return env.Count(t, `SELECT COUNT(*) FROM partition_taints WHERE cleared_at IS NULL`), env.Count(t, `SELECT COUNT(*) FROM watermarks`)
	}
	refuse := func(tok, path, body, field string, want ...string) {
		t.Helper()
		t0, w0 := counts()
		code, out := apiCall(t, env, tok, "POST", path, body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["code"] != "invalid" || e["field"] != nilIfEmpty(field) {
			t.Fatalf("POST %s %.80s: %d %v, want 400 invalid on field %q", path, body, code, out, field)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("POST %s %.80s: message %q lacks %q", path, body, msg, w)
			}
		}
		for _, leak := range []string{"http:", "json:", "request body too large"} {
			if strings.Contains(msg, leak) {
				t.Errorf("POST %s: message %q leaks %q", path, msg, leak)
			}
		}
		if t1, w1 := counts(); t1 != t0 || w1 != w0 {
			t.Fatalf("POST %s %.80s wrote: taints %d→%d, watermarks %d→%d", path, body, t0, t1, w0, w1)
		}
	}
	refuse(admin, taint, `{"reason":"bad rows","bogus":1}`, "bogus", `unknown field "bogus"; the fields there are reason`)
	refuse(admin, taint, `{"reasn":"bad rows"}`, "reasn", `unknown field "reasn"; the fields there are reason`)
	refuse(admin, taint, `{"reason":5}`, "reason", "reason must be a string, not a JSON number")
	refuse(admin, taint, `{"reason":"`+strings.Repeat("x", 1100000)+`"}`, "reason", "at most 500 characters")
	refuse(tok, watermark, `{"partition":"2025-01-05","bogus":1}`, "bogus", `unknown field "bogus"; the fields there are partition`)
	refuse(tok, watermark, `{"key":"2025-01-05"}`, "key", `unknown field "key"; the fields there are partition`)
	// The same bodies without the stray field pass, so the refusals above
	// were about that field.
	if code, out := apiCall(t, env, admin, "POST", taint, `{"reason":"bad rows"}`); code != http.StatusOK {
		t.Fatalf("taint: %d %v", code, out)
	}
	if code, out := apiCall(t, env, tok, "POST", watermark, `{"partition":"2025-01-05"}`); code != http.StatusOK {
		t.Fatalf("watermark: %d %v", code, out)
	}
	refuse(admin, clear, `{"bogus":1}`, "bogus", `unknown field "bogus"`, "takes no fields")
	if code, out := apiCall(t, env, admin, "POST", clear, ``); code != http.StatusOK {
		t.Fatalf("clear-taint without a body: %d %v", code, out)
	}
}

// Actions without settings refuse a body with fields alike: token revoke
// and workspace reload read no body at all, so {"x": 1} revoked the token
// or reloaded the workspace where pause, resume and clear-taint answer
// 400. Nothing is done.
func TestBodilessActionsRefuseFields(t *testing.T) {
	env, _ := apiBFEnv(t)
	admin := env.AdminToken()
	code, made := apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"keep"}`)
	if code != http.StatusCreated {
		t.Fatalf("token: %d %v", code, made)
	}
	id := int(made["id"].(float64))
	for _, path := range []string{fmt.Sprintf("/api/v1/tokens/%d/revoke", id), "/api/v1/workspace/reload"} {
		code, out := apiCall(t, env, admin, "POST", path, `{"x":1}`)
		e, _ := out["error"].(map[string]any)
		if code != http.StatusBadRequest || e["field"] != "x" || !strings.Contains(fmt.Sprint(e["message"]), "takes no fields: send {} or no body") {
			t.Errorf("POST %s {\"x\":1}: %d %v", path, code, out)
		}
	}
	if code, out := apiCall(t, env, made["token"].(string), "GET", "/api/v1/me", ""); code != http.StatusOK {
		t.Fatalf("the refused revoke revoked the token: %d %v", code, out)
	}
	if code, out := apiCall(t, env, admin, "POST", fmt.Sprintf("/api/v1/tokens/%d/revoke", id), ``); code != http.StatusOK {
		t.Fatalf("revoke without a body: %d %v", code, out)
	}
}
