package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// A schedule's or a sensor's page link into its older ticks, evaluations
// or events that no longer holds (a cursor the list did not give out) is
// worded for the page, not in the API's terms (next_cursor), and leads back
// to the list's first page; the API keeps its wording.
func TestPagingErrorsOnPagesSpeakOfTheLink(t *testing.T) {
	t.Parallel()
	senv, _, stok := schedEnv(t)
	nenv, _, ntok := sensorEnv(t)
	for _, c := range []struct {
		env       *testkit.Env
		tok       string
		page, api string
	}{
		{senv, stok, "/schedules/hourly?cursor=bogus", "/api/v1/schedules/hourly/ticks?cursor=bogus"},
		{nenv, ntok, "/sensors/counter?evaluations=bogus", "/api/v1/sensors/counter/evaluations?cursor=bogus"},
		{nenv, ntok, "/sensors/arrivals?events=bogus", "/api/v1/sensors/arrivals/events?cursor=bogus"},
	} {
		code, doc := pgGet(t, c.env, c.env.Client(t, auth.RoleViewer), c.page)
		msg := text(doc.Find(`[data-testid="error-message"]`))
		if code != 400 || msg != "this page link is out of date; go back to the first page" {
			t.Errorf("%s: %d %q, want 400 saying the link is out of date", c.page, code, msg)
		}
		u, _ := url.Parse(c.page)
		if back := doc.Find(`[data-testid="error-back"]`); back.AttrOr("href", "") != u.Path || text(back) != "Back to the first page" {
			t.Errorf("%s: the way back is %q to %q, want the first page %s", c.page, text(back), back.AttrOr("href", ""), u.Path)
		}
		code, body := apiCall(t, c.env, c.tok, "GET", c.api, "")
		e, _ := body["error"].(map[string]any)
		if m, _ := e["message"].(string); code != 400 || e["field"] != "cursor" || !strings.Contains(m, "pass the next_cursor of the previous page") {
			t.Errorf("%s: %d %v, want the API's 400 on cursor naming next_cursor", c.api, code, body)
		}
	}
}
