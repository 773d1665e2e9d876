package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
)

// TestBackfillPriorityIsBounded: a backfill's priority was any int64
// through the API and the form, while schedules and sensors bound theirs
// to -1000..1000. A priority outside that range is a 400 naming the field
// and the range (API) or a message beside the form's priority field, on
// create and preview, and creates nothing; the bounds themselves are taken.
func TestBackfillPriorityIsBounded(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	tok := env.Token(t, auth.RoleOperator)
	body := func(priority string) string {
		return `{"assets": ["t.daily"], "selector": {"type": "range", "start": "2025-01-01", "end": "2025-01-02"}, "priority": ` + priority + `}`
	}
	for _, p := range []string{"1001", "-1001", "9223372036854775807", "-9223372036854775808"} {
		for _, path := range []string{"/api/v1/backfills", "/api/v1/backfills/preview"} {
			code, out := apiCall(t, env, tok, "POST", path, body(p))
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != http.StatusBadRequest || e["field"] != "priority" || !strings.Contains(msg, "priority must be between -1000 and 1000, got "+p) ||
				!strings.Contains(msg, "leave it out for the default, 0") {
				t.Errorf("%s with priority %s: %d %v, want a 400 on priority naming the range", path, p, code, out)
			}
		}
	}

	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-02"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	for _, p := range []string{"1001", "-1001", "99999999999999999999"} {
		form.Set("priority", p)
		for _, path := range []string{"/backfills", "/backfills/preview"} {
			resp := env.SessionPost(t, c, path, form)
			doc := pgDoc(t, resp)
			msg := strings.TrimSpace(doc.Find(`[data-testid="error-priority"]`).Text())
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "at least -1,000 and at most 1,000, got "+p) {
				t.Errorf("form %s with priority %s: status %d, message %q beside priority", path, p, resp.StatusCode, msg)
			}
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("out-of-range priorities created %d backfills", n)
	}

	for _, p := range []string{"1000", "-1000"} {
		code, out := apiCall(t, env, tok, "POST", "/api/v1/backfills", body(p))
		if code != http.StatusCreated || out["priority"] != map[string]float64{"1000": 1000, "-1000": -1000}[p] {
			t.Errorf("create with priority %s: %d %v", p, code, out)
		}
	}
}
