package handlers_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestTokenExpiryBoundByCreatingToken: signed in with a token that expires,
// the tokens it creates expire no later than it. Leaving the expiry out, or
// asking for a later one (expires_in or expires_at), is a 400 on the field
// that says the limit and how to get a longer-lived token, and creates
// nothing; an expiry up to the limit is created. A token without expiry
// creates tokens without one.
func TestTokenExpiryBoundByCreatingToken(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.AdminToken()
	code, out := apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"ci","expires_in":"1h","role":"operator"}`)
	if code != http.StatusCreated {
		t.Fatalf("create ci: HTTP %d %v", code, out)
	}
	ci, _ := out["token"].(string)
	limit, _ := out["expires_at"].(string)
	at, err := time.Parse(time.RFC3339, limit)
	if err != nil {
		t.Fatalf("ci's expires_at %q: %v", limit, err)
	}
	countTokens := func() int {
		ts, err := env.Store.ListTokens(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(ts)
	}
	before := countTokens()
	later := at.Add(time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct{ body, field string }{
		{`{"name":"forever"}`, "expires_at"},
		{`{"name":"decade","expires_in":"3650d"}`, "expires_in"},
		{`{"name":"two-hours","expires_in":"2h"}`, "expires_in"},
		{`{"name":"later","expires_at":"` + later + `"}`, "expires_at"},
	} {
		code, out := apiCall(t, env, ci, "POST", "/api/v1/tokens", tc.body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["field"] != tc.field {
			t.Errorf("%s with a token expiring at %s: HTTP %d %v, want 400 on %s", tc.body, limit, code, out, tc.field)
			continue
		}
		for _, want := range []string{"expires at " + at.UTC().Format(time.RFC3339), "sign in with a password", "a token without expiry"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", tc.body, msg, want)
			}
		}
	}
	// The form, posted with the token, is held to the same bound.
	for _, form := range []string{"name=form-forever", "name=form-long&expires_in=2h"} {
		resp := env.BearerDo(t, "POST", "/settings/tokens", ci, "application/x-www-form-urlencoded", form)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "expires at "+at.UTC().Format(time.RFC3339)) {
			t.Errorf("form %s with a token expiring at %s: HTTP %d, want 400 saying the limit", form, limit, resp.StatusCode)
		}
	}
	if n := countTokens(); n != before {
		t.Fatalf("refused creates made %d tokens", n-before)
	}
	// Up to the limit is fine: a shorter lifetime, or the same time.
	for _, body := range []string{`{"name":"half-hour","expires_in":"30m"}`, `{"name":"same","expires_at":"` + limit + `"}`} {
		if code, out := apiCall(t, env, ci, "POST", "/api/v1/tokens", body); code != http.StatusCreated || out["expires_at"] == nil {
			t.Errorf("%s with a token expiring at %s: HTTP %d %v, want 201", body, limit, code, out)
		}
	}
	// A token without expiry still creates one without.
	forever := env.Token(t, auth.RoleOperator)
	if code, out := apiCall(t, env, forever, "POST", "/api/v1/tokens", `{"name":"forever"}`); code != http.StatusCreated || out["expires_at"] != nil {
		t.Errorf("a token without expiry creating one without: HTTP %d %v", code, out)
	}
}
