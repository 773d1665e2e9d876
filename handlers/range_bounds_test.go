package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

const rangeBoundsWS = `assets:
  r.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-01-11}}
    executor: {demo: {duration: 1ms}}
sensors:
  arrivals:
    assets: [r.daily]
`

// TestAPIRangeRefusesAnEmptyStartOrEnd: a range's start or end sent as ""
// (a client's unset variable) meant the asset's first or last partition, a
// backfill of the whole history without a word. Backfill create and
// preview, with a range or a filter selector, and a pushed sensor event
// answer 400 naming the field and saying to leave it out for the first or
// last partition, and write nothing; left out, it still means just that.
func TestAPIRangeRefusesAnEmptyStartOrEnd(t *testing.T) {
	t.Parallel()
	env, tok := operatorEnv(t, rangeBoundsWS)
	for _, tc := range []struct{ selector, field, want string }{
		{`{"type": "range", "start": "", "end": "2025-01-03"}`, "selector.start", "selector.start is empty; leave start out to begin at the asset's first partition"},
		{`{"type": "range", "start": "2025-01-03", "end": ""}`, "selector.end", "selector.end is empty; leave end out to run to the asset's last partition"},
		{`{"type": "range", "start": "", "end": ""}`, "selector.start", "selector.start is empty"},
		{`{"type": "filter", "statuses": ["missing"], "end": ""}`, "selector.end", "selector.end is empty"},
		// The explicit key list is read apart from the rest of the body.
		{`{"type": "explicit", "keys": ["2025-01-02"], "start": ""}`, "selector.start", "selector.start is empty"},
	} {
		msg := selectorRefused(t, env, tok, `{"assets": ["r.daily"], "selector": `+tc.selector+`}`, tc.field)
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "or give a partition key") {
			t.Errorf("%s: message %q, want %q and how to fix it", tc.selector, msg, tc.want)
		}
	}
	// Left out, start and end are the asset's first and last partition.
	code, out := apiCall(t, env, tok, "POST", "/api/v1/backfills/preview", `{"assets": ["r.daily"], "selector": {"type": "range", "end": "2025-01-03"}}`)
	if code != http.StatusOK || out["total_partitions"] != float64(3) {
		t.Fatalf("preview with start left out: %d %v, want the 3 partitions up to 2025-01-03", code, out)
	}

	before := apiCountEvents(t, env)
	for _, tc := range []struct{ body, field, want string }{
		{`{"message_id": "m-1", "start": "", "end": "2025-01-03"}`, "start", "start is empty; leave start out to begin at the asset's first partition"},
		{`{"message_id": "m-2", "start": "2025-01-03", "end": ""}`, "end", "end is empty; leave end out to run to the asset's last partition"},
	} {
		code, out := apiCall(t, env, tok, "POST", "/api/v1/sensors/arrivals/events", tc.body)
		e, _ := out["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != http.StatusBadRequest || e["field"] != tc.field || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("push %s: %d %v, want 400 on %s saying %q", tc.body, code, out, tc.field, tc.want)
		}
	}
	if after := apiCountEvents(t, env); after != before {
		t.Fatalf("refused pushes wrote %d events", after-before)
	}
	if _, evs := apiCall(t, env, tok, "GET", "/api/v1/sensors/arrivals/events", ""); len(evs["events"].([]any)) != 0 {
		t.Fatalf("refused pushes recorded sensor events: %v", evs)
	}
	if _, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", ""); len(list["backfills"].([]any)) != 0 {
		t.Fatalf("refused pushes launched backfills: %v", list)
	}
}
