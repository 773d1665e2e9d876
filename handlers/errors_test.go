package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
)

// TestErrorPageBackLinkIsReachable: an error page's way out leads where the
// user may go: a viewer refused /admin/users goes back to all assets (not
// to the users page that refused them), an admin's error there goes back
// to users, and a failed taint goes back to its partition.
func TestErrorPageBackLinkIsReachable(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	viewer := env.Client(t, auth.RoleViewer)
	admin := env.Client(t, auth.RoleAdmin)
	back := func(resp *http.Response) (int, string, string) {
		t.Helper()
		defer resp.Body.Close()
		doc := pgDoc(t, resp)
		a := doc.Find(`[data-testid="error-back"]`)
		return resp.StatusCode, a.AttrOr("href", ""), strings.TrimSpace(a.Text())
	}
	get := func(c *http.Client, path string) *http.Response {
		t.Helper()
		resp, err := c.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct {
		name       string
		resp       *http.Response
		status     int
		href, text string
	}{
		{"viewer GET /admin/users", get(viewer, "/admin/users"), http.StatusForbidden, "/", "Back to all assets"},
		{"viewer POST /admin/users", env.SessionPost(t, viewer, "/admin/users", url.Values{"name": {"x"}}), http.StatusForbidden, "/", "Back to all assets"},
		{"admin, unknown user", env.SessionPost(t, admin, "/admin/users/999/role", url.Values{"role": {"viewer"}}), http.StatusNotFound, "/admin/users", "Back to users"},
		{"taint without a reason", env.SessionPost(t, admin, "/assets/t.daily/partitions/2025-01-03/taint", url.Values{"reason": {"  "}}),
			http.StatusBadRequest, "/assets/t.daily/partitions/2025-01-03", "Back to partition 2025-01-03"},
		{"viewer taints", env.SessionPost(t, viewer, "/assets/t.daily/partitions/2025-01-03/taint", url.Values{"reason": {"bad rows"}}),
			http.StatusForbidden, "/assets/t.daily/partitions/2025-01-03", "Back to partition 2025-01-03"},
		{"clear a taint that is not there", env.SessionPost(t, admin, "/assets/t.daily/partitions/2025-01-03/clear-taint", nil),
			http.StatusConflict, "/assets/t.daily/partitions/2025-01-03", "Back to partition 2025-01-03"},
		// The partition does not exist: its page would be a 404 too.
		{"taint an unknown partition", env.SessionPost(t, admin, "/assets/t.daily/partitions/nope/taint", url.Values{"reason": {"bad rows"}}),
			http.StatusNotFound, "/", "Back to all assets"},
	} {
		status, href, text := back(c.resp)
		if status != c.status || href != c.href || text != c.text {
			t.Errorf("%s: %d, back to %q %q; want %d, %q %q", c.name, status, href, text, c.status, c.href, c.text)
		}
	}
	// Where the links lead opens for that user.
	if resp := get(viewer, "/"); resp.StatusCode != http.StatusOK {
		t.Errorf("viewer's back link: %d", resp.StatusCode)
	}
	if code, _ := pgGet(t, env, viewer, "/assets/t.daily/partitions/2025-01-03"); code != http.StatusOK {
		t.Errorf("partition page: %d", code)
	}
}

// TestErrorPagesSayTheBrowserWay: error pages point at pages, not API
// endpoints, while the JSON API keeps its own words; a stale backfill
// button no longer quotes "send its state_version".
func TestErrorPagesSayTheBrowserWay(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/backfills?asset=nope")
	msg := doc.Find(`[data-testid="error-message"]`).Text()
	if code != http.StatusBadRequest || !strings.Contains(msg, `unknown asset "nope"; the Assets page lists the declared assets`) || strings.Contains(msg, "/api/") {
		t.Errorf("page: %d %q", code, msg)
	}
	resp, body := env.GetBody(t, "/api/v1/backfills?asset=nope")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "GET /api/v1/assets lists the declared assets") {
		t.Errorf("API: %d %s", resp.StatusCode, body)
	}

	// A button pressed on a page that is out of date.
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-04", 2)
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "other"); err != nil {
		t.Fatal(err)
	}
	op := env.Client(t, auth.RoleOperator)
	r := env.SessionPost(t, op, "/backfills/"+b.ID+"/resume", url.Values{"expected_state_version": {fmt.Sprint(b.StateVersion)}})
	doc = pgDoc(t, r)
	r.Body.Close()
	msg = doc.Find(`[data-testid="message"]`).Text()
	if r.StatusCode != http.StatusConflict || !strings.Contains(msg, "Someone changed this backfill") || strings.Contains(msg, "state_version") || strings.Contains(msg, "/api/") {
		t.Errorf("stale resume: %d %q", r.StatusCode, msg)
	}
}
