package handlers_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestTokenExpiry: a token made with expires_in works until then, is listed
// with its expiry, and is then refused with 401 "token expired" saying when
// and how to make a new one; the list marks it expired.
func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	viewer := env.Token(t, auth.RoleViewer)
	before := time.Now()
	code, out := apiCall(t, env, viewer, "POST", "/api/v1/tokens", `{"name":"short-lived","expires_in":"1m"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: HTTP %d %v", code, out)
	}
	secret, _ := out["token"].(string)
	at, err := time.Parse(time.RFC3339, strings.TrimSpace(out["expires_at"].(string)))
	if err != nil || at.Before(before.Add(time.Minute-time.Second)) || at.After(time.Now().Add(time.Minute+time.Second)) || out["expired"] != false {
		t.Fatalf("created token: expires_at %v (%v), expired %v", out["expires_at"], err, out["expired"])
	}
	// Rather than wait the minute, the token's expiry is brought to a
	// second from now (the least lifetime the API gives is a minute).
	at = time.Now().Add(time.Second).Truncate(time.Second)
	if _, err := env.Store.RawWriter().Exec(`UPDATE api_tokens SET expires_at = ? WHERE id = ?`, at.UnixMilli(), int64(out["id"].(float64))); err != nil {
		t.Fatal(err)
	}
	code, _ = apiCall(t, env, viewer, "POST", "/api/v1/tokens", `{"name":"forever"}`)
	if code != http.StatusCreated {
		t.Fatalf("create without expiry: HTTP %d", code)
	}
	_, list := apiCall(t, env, viewer, "GET", "/api/v1/tokens", "")
	found := 0
	for _, it := range list["tokens"].([]any) {
		tk := it.(map[string]any)
		switch tk["name"] {
		case "short-lived":
			found++
			if tk["expires_at"] == nil {
				t.Errorf("listed without expires_at: %v", tk)
			}
		case "forever":
			found++
			if tk["expires_at"] != nil || tk["expired"] != false {
				t.Errorf("a token without expiry listed as %v", tk)
			}
		}
	}
	if found != 2 {
		t.Fatalf("list %v lacks the new tokens", list)
	}
	// Works until it expires, then 401 with when and how to make another.
	var msg string
	testkit.Eventually(t, 10*time.Second, "the token to expire", func() bool {
		resp := env.BearerDo(t, "GET", "/api/v1/me", secret, "", "")
		b := readBody(t, resp)
		if resp.StatusCode == http.StatusUnauthorized {
			msg = b
			return true
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/v1/me with the token: HTTP %d %s", resp.StatusCode, b)
		}
		return false
	})
	for _, want := range []string{"token expired", `\"short-lived\"`, "expired at " + at.UTC().Format(time.RFC3339), "/settings/tokens", "tessera token create", "--expires"} {
		if !strings.Contains(msg, want) {
			t.Errorf("401 %s lacks %q", msg, want)
		}
	}
	_, list = apiCall(t, env, viewer, "GET", "/api/v1/tokens", "")
	for _, it := range list["tokens"].([]any) {
		if tk := it.(map[string]any); tk["name"] == "short-lived" && tk["expired"] != true {
			t.Errorf("an expired token listed as %v", tk)
		}
	}
	// The admin's page of every token lists the expiry and says expired.
	c := env.Client(t, auth.RoleAdmin)
	_, page := env.GetText(t, c, "/admin/users")
	if !strings.Contains(page, "short-lived") || !strings.Contains(page, `data-testid="token-expired"`) || !strings.Contains(page, at.UTC().Format("2006-01-02 15:04 UTC")) {
		t.Errorf("the tokens page does not show the token's expiry and that it expired")
	}
}

// TestTokenExpiryBadInput: an expiry that is negative, zero, unparseable,
// absurdly long, in the past or given twice is a 400 naming the field, on
// the API and on the form, and creates no token.
func TestTokenExpiryBadInput(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	viewer := env.Token(t, auth.RoleViewer)
	c := env.Client(t, auth.RoleViewer)
	tokensBefore, eventsBefore := tokenCount(t, env), apiCountEvents(t, env)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	far := time.Now().Add(20 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	cases := []struct{ body, field, want string }{
		{`{"name":"x","expires_in":"-5d"}`, "expires_in", "negative"},
		{`{"name":"x","expires_in":"0"}`, "expires_in", "more than 0"},
		{`{"name":"x","expires_in":"soon"}`, "expires_in", `"soon" is not a duration`},
		{`{"name":"x","expires_in":"90"}`, "expires_in", "has no unit"},
		{`{"name":"x","expires_in":"5000d"}`, "expires_in", "longer than the most a token may live, 3650 days"},
		{`{"name":"x","expires_in":"99999999999999d"}`, "expires_in", "is not a duration"},
		{`{"name":"x","expires_in":"90d","expires_at":"` + far + `"}`, "expires_in", "not both"},
		{`{"name":"x","expires_at":"next week"}`, "expires_at", "is not an RFC 3339 time"},
		{`{"name":"x","expires_at":"` + past + `"}`, "expires_at", "is not in the future"},
		{`{"name":"x","expires_at":"` + far + `"}`, "expires_at", "the most a token may live"},
		{`{"name":"x","expires_in":90}`, "expires_in", "must be a string"},
		// Empty is not "never": that is leaving the field out.
		{`{"name":"x","expires_in":""}`, "expires_in", "expires_in is empty; give a lifetime such as \"90d\", or leave the field out for a token that never expires"},
		{`{"name":"x","expires_in":"  "}`, "expires_in", "expires_in is empty"},
		{`{"name":"x","expires_at":""}`, "expires_at", "expires_at is empty; give a time such as"},
		{`{"name":"x","expires_at":""}`, "expires_at", "leave the field out for a token that never expires"},
		// A lifetime under a minute makes a token that is all but expired.
		{`{"name":"x","expires_in":"1ms"}`, "expires_in", `"1ms" is shorter than 1 minute, the least a token may live`},
		{`{"name":"x","expires_in":"1s"}`, "expires_in", "shorter than 1 minute"},
		{`{"name":"x","expires_in":"59s"}`, "expires_in", "shorter than 1 minute"},
		{`{"name":"x","expires_at":"` + soon + `"}`, "expires_at", "less than 1 minute away, the least a token may live"},
	}
	for _, tc := range cases {
		code, out := apiCall(t, env, viewer, "POST", "/api/v1/tokens", tc.body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["field"] != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: HTTP %d %v, want 400 on %s saying %q", tc.body, code, out, tc.field, tc.want)
		}
	}
	for bad, want := range map[string]string{"-1d": "negative", "forever": "not a duration", "100000d": "longer than the most", "1s": "shorter than 1 minute", "1ms": "shorter than 1 minute"} {
		resp := env.SessionPost(t, c, "/settings/tokens", url.Values{"name": {"form-token"}, "expires_in": {bad}})
		b := readBody(t, resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "Expires in:") || !strings.Contains(b, want) {
			t.Errorf("form with expires_in %q: HTTP %d, want 400 saying what is wrong with Expires in (%q)", bad, resp.StatusCode, want)
		}
		// The form keeps what was typed, to correct it (found by the UI audit).
		if !strings.Contains(b, `value="form-token"`) || !strings.Contains(b, `value="`+html.EscapeString(bad)+`"`) {
			t.Errorf("form with expires_in %q: the refused form lost its name or expiry", bad)
		}
	}
	if n := tokenCount(t, env); n != tokensBefore {
		t.Errorf("bad expiries created %d tokens", n-tokensBefore)
	}
	if n := apiCountEvents(t, env); n != eventsBefore {
		t.Errorf("bad expiries wrote %d events", n-eventsBefore)
	}
	// A good one on the form is listed with its date.
	resp := env.SessionPost(t, c, "/settings/tokens", url.Values{"name": {"form-token"}, "expires_in": {"30d"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("form with expires_in 30d: HTTP %d", resp.StatusCode)
	}
	_, page := env.GetText(t, c, "/settings/tokens")
	want := time.Now().Add(30 * 24 * time.Hour).UTC().Format("2006-01-02")
	if !strings.Contains(page, want) {
		t.Errorf("the tokens page does not show the expiry date %s", want)
	}
}

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
	before := tokenCount(t, env)
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
		b := readBody(t, resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "expires at "+at.UTC().Format(time.RFC3339)) {
			t.Errorf("form %s with a token expiring at %s: HTTP %d, want 400 saying the limit", form, limit, resp.StatusCode)
		}
	}
	if n := tokenCount(t, env); n != before {
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

// tokenCount is how many API tokens the store holds, of every user.
func tokenCount(t *testing.T, env *testkit.Env) int {
	t.Helper()
	ts, err := env.Store.ListTokens(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}
