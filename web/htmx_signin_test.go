package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestHtmxSignInReturnsToThePage: a live section's fragment request from a
// session that was signed out elsewhere (here by a password change in
// another session) sends the browser to the login page with next= the page
// it shows (HX-Current-URL), not the fragment: signing in again used to
// land on a bare, unstyled /backfills?fragment=rows table.
func TestHtmxSignInReturnsToThePage(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.CreateUser(t, "ida", auth.RoleViewer, testkit.TestPassword)
	stale := env.Login(t, "ida", testkit.TestPassword)
	other := env.Login(t, "ida", testkit.TestPassword)
	const next = "a brand new passphrase"
	if r := env.SessionPost(t, other, "/settings/password", url.Values{"current_password": {testkit.TestPassword},
		"new_password": {next}, "confirm_password": {next}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("change password: %d", r.StatusCode)
	}
	for _, tc := range []struct{ fragment, page, want string }{
		{"/backfills?fragment=rows&state=RUNNING", "/backfills?state=RUNNING", "/backfills?state=RUNNING"},
		{"/assets/raw.events/active-backfills", "/assets/raw.events?view=staleness", "/assets/raw.events?view=staleness"},
		{"/backfills/active", "", "/"},
	} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+tc.fragment, nil)
		req.Header.Set("HX-Request", "true")
		if tc.page != "" {
			req.Header.Set("HX-Current-URL", env.URL+tc.page)
		}
		resp, err := stale.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("HX-Redirect"))
		if resp.StatusCode != http.StatusUnauthorized || err != nil || loc.Path != "/login" {
			t.Fatalf("%s from a signed-out session: %d, HX-Redirect %q", tc.fragment, resp.StatusCode, resp.Header.Get("HX-Redirect"))
		}
		if got := loc.Query().Get("next"); got != tc.want || strings.Contains(got, "fragment") {
			t.Errorf("%s: after signing in again the browser goes to %q, want %q", tc.fragment, got, tc.want)
		}
	}
}
