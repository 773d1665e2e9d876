package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

const selectorErrWS = `assets:
  m.multi:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01, end: 2025-01-06}}
        region: {static: [eu, us]}
    executor: {demo: {duration: 1ms}}
`

// selectorRefused posts body to the backfill create and preview endpoints
// and returns the 400's message for field; nothing may be written.
func selectorRefused(t *testing.T, env *testkit.Env, tok, body, field string) string {
	t.Helper()
	before := apiCountEvents(t, env)
	var msg string
	for _, path := range []string{"/api/v1/backfills", "/api/v1/backfills/preview"} {
		code, out := apiCall(t, env, tok, "POST", path, body)
		e, _ := out["error"].(map[string]any)
		msg, _ = e["message"].(string)
		if code != http.StatusBadRequest || e["code"] != "invalid" || e["field"] != field {
			t.Fatalf("%s %s: %d %v, want 400 invalid on %s", path, body, code, out, field)
		}
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("%s wrote %d events", body, after-before)
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	if n := len(list["backfills"].([]any)); n != 0 {
		t.Fatalf("%s created %d backfills", body, n)
	}
	return msg
}

// A filter on a dimension the asset does not have lists the dimensions it
// has, and suggests the closest name when one is a few letters off.
func TestSelectorUnknownDimensionListsDimensions(t *testing.T) {
	t.Parallel()
	env, tok := operatorEnv(t, selectorErrWS)
	for _, tc := range []struct {
		dims    string
		want    []string
		notWant string
	}{
		{`{"regio":["eu"]}`, []string{`asset m.multi has no dimension "regio" (did you mean "region"?); its dimensions are date, region`}, ""},
		{`{"Date":["2025-01-01"]}`, []string{`has no dimension "Date" (did you mean "date"?)`, "its dimensions are date, region"}, ""},
		{`{"colour":["red"]}`, []string{`asset m.multi has no dimension "colour"; its dimensions are date, region`}, "did you mean"},
		// Of several wrong names, the first by name is named, every time.
		{`{"zone":["a"],"color":["b"]}`, []string{`no dimension "color"`}, ""},
	} {
		body := `{"assets":["m.multi"],"selector":{"type":"filter","dimensions":` + tc.dims + `},"chunk_size":1,"max_concurrent_runs":1}`
		msg := selectorRefused(t, env, tok, body, "selector.dimensions")
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tc.dims, msg, w)
			}
		}
		if tc.notWant != "" && strings.Contains(msg, tc.notWant) {
			t.Errorf("%s: message %q has %q", tc.dims, msg, tc.notWant)
		}
	}
}

// An explicit selector with no keys says how to fix it: give a key (an
// example from the asset's own keys) or select by range or status.
func TestSelectorEmptyExplicitListSaysHowToFix(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: selectorErrWS + `  d.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-04-01}}
    executor: {demo: {duration: 1ms}}
  s.static:
    partitions: {static: [north, south]}
    executor: {demo: {duration: 1ms}}
`})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	tok := env.Token(t, auth.RoleOperator)
	for asset, example := range map[string]string{
		"d.daily":  `{"type": "explicit", "keys": ["2025-01-01"]}`,
		"s.static": `{"type": "explicit", "keys": ["north"]}`,
		"m.multi":  `{"type": "explicit", "keys": ["2025-01-01|eu"]}`,
	} {
		for _, keys := range []string{`"keys":[]`, `"keys":null`, ``} {
			sel := `{"type":"explicit"}`
			if keys != "" {
				sel = `{"type":"explicit",` + keys + `}`
			}
			body := `{"assets":["` + asset + `"],"selector":` + sel + `,"chunk_size":1,"max_concurrent_runs":1}`
			msg := selectorRefused(t, env, tok, body, "selector.keys")
			for _, w := range []string{
				"the explicit key list is empty",
				"give at least one partition key in selector.keys, e.g. " + example,
				`select partitions by range ({"type": "range", "start": ..., "end": ...})`,
				`by status ({"type": "filter", "statuses": ["missing"]})`,
			} {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: message %q lacks %q", body, msg, w)
				}
			}
		}
	}
}

// A dimension with an empty list of values is refused, not ignored (which
// selected every value of it).
func TestSelectorEmptyDimensionValues(t *testing.T) {
	t.Parallel()
	env, tok := operatorEnv(t, selectorErrWS)
	body := `{"assets":["m.multi"],"selector":{"type":"filter","statuses":["missing"],"dimensions":{"region":[]}},"chunk_size":1,"max_concurrent_runs":1}`
	msg := selectorRefused(t, env, tok, body, "selector.dimensions.region")
	if want := "dimension region lists no value: name at least one, or leave region out to take all of its values"; !strings.Contains(msg, want) {
		t.Errorf("message %q lacks %q", msg, want)
	}
}
