package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestInvalidUTF8BodyIsRefused: a JSON body whose strings (values or field
// names) hold bytes that are not UTF-8 is a 400 naming the path of the
// value, instead of being decoded with U+FFFD in their place and stored.
// Nothing is written.
func TestInvalidUTF8BodyIsRefused(t *testing.T) {
	t.Parallel()
	env, tok := apiBFEnv(t)
	cases := []struct {
		name, path, body, field string
		want                    []string
	}{
		{"backfill key", "/api/v1/backfills",
			"{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"explicit\",\"keys\":[\"2025-01-01\",\"2025-01-02\",\"2025-01-03\",\"2025-01-0\xff\"]},\"chunk_size\":1,\"max_concurrent_runs\":1}",
			"selector.keys[3]", []string{"selector.keys[3] holds invalid UTF-8", "byte 0xff at byte offset 109 (line 1, column 110)", "UTF-8"}},
		{"backfill asset", "/api/v1/backfills",
			"{\"assets\":[\"a.d\xc3aily\"],\"selector\":{\"type\":\"range\"},\"chunk_size\":1,\"max_concurrent_runs\":1}",
			"assets[0]", []string{"assets[0] holds invalid UTF-8", "byte 0xc3"}},
		{"preview field name", "/api/v1/backfills/preview",
			"{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"range\",\"st\xffart\":\"2025-01-01\"}}",
			"selector", []string{"a field name in selector holds invalid UTF-8"}},
		{"materialization error", "/api/v1/materializations",
			"{\"asset\":\"a.daily\",\"partition\":\"2025-01-01\",\"status\":\"failed\",\"error\":\"disk \xfe full\"}",
			"error", []string{"error holds invalid UTF-8", "byte 0xfe"}},
		{"materialization metadata in a list", "/api/v1/materializations",
			"[{\"asset\":\"a.daily\",\"partition\":\"2025-01-01\",\"status\":\"materialized\"},{\"asset\":\"a.daily\",\"partition\":\"2025-01-02\",\"status\":\"materialized\",\"metadata\":{\"rows\":\"1\xff2\"}}]",
			"materializations[1].metadata.rows", []string{"materializations[1].metadata.rows holds invalid UTF-8"}},
		{"materialization metadata key", "/api/v1/materializations",
			"{\"materializations\":[{\"asset\":\"a.daily\",\"partition\":\"2025-01-01\",\"status\":\"materialized\",\"metadata\":{\"r\xffows\":1}}]}",
			"materializations[0].metadata", []string{"a field name in materializations[0].metadata holds invalid UTF-8"}},
		{"lone surrogate escape", "/api/v1/materializations",
			`{"asset":"a.daily","partition":"2025-01-01","status":"failed","error":"disk \\ \" \ud800 full"}`,
			"error", []string{"error holds invalid UTF-8", `the escape \ud800, half of a UTF-16 surrogate pair`}},
		{"lone low surrogate in a key", "/api/v1/backfills/preview",
			`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["\udc00"]}}`,
			"selector.keys[0]", []string{"selector.keys[0] holds invalid UTF-8", `\udc00`}},
	}
	before := apiCountEvents(t, env)
	for _, tc := range cases {
		code, out := apiCall(t, env, tok, "POST", tc.path, tc.body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["field"] != tc.field {
			t.Errorf("%s: HTTP %d %v, want 400 on field %q", tc.name, code, out, tc.field)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tc.name, msg, w)
			}
		}
	}
	code, out := apiCall(t, env, env.AdminToken(), "POST", "/api/v1/assets/a.daily/partitions/2025-01-01/taint", "{\"reason\":\"bad \xffrows\"}")
	if e, _ := out["error"].(map[string]any); code != http.StatusBadRequest || e["field"] != "reason" || !strings.Contains(e["message"].(string), "reason holds invalid UTF-8") {
		t.Errorf("taint reason: HTTP %d %v, want 400 on field reason", code, out)
	}
	if after := apiCountEvents(t, env); after != before {
		t.Errorf("bodies with invalid UTF-8 wrote %d events", after-before)
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	if n := len(list["backfills"].([]any)); n != 0 {
		t.Errorf("bodies with invalid UTF-8 created %d backfills", n)
	}
	// Valid UTF-8 beyond ASCII, raw or escaped, is text like any other.
	code, out = apiCall(t, env, tok, "POST", "/api/v1/materializations", `{"asset":"a.daily","partition":"2025-01-01","status":"failed","error":"Plattenplatz erschöpft \u2013 ✗"}`)
	if code != http.StatusOK && code != http.StatusCreated {
		t.Errorf("a report in valid UTF-8: HTTP %d %v", code, out)
	}
}
