package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

func countAccounts(t *testing.T, env *testkit.Env) string {
	t.Helper()
	return fmt.Sprint(env.AccountCounts(t))
}

func TestAccountsAPI(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.AdminToken()

	// Create, idempotently.
	body := `{"name":"ada","role":"operator","password":"correct-horse-battery"}`
	code, u := apiCall(t, env, admin, "POST", "/api/v1/users", body, "Idempotency-Key", "u1")
	if code != 201 || u["name"] != "ada" || u["role"] != "operator" || u["password_hash"] != nil {
		t.Fatalf("create user: %d %v", code, u)
	}
	code, again := apiCall(t, env, admin, "POST", "/api/v1/users", body, "Idempotency-Key", "u1")
	if code != 200 || again["id"] != u["id"] {
		t.Fatalf("repeat with the same key: %d %v", code, again)
	}
	if code, _ := apiCall(t, env, admin, "POST", "/api/v1/users", `{"name":"bob","role":"viewer","password":"correct-horse-battery"}`, "Idempotency-Key", "u1"); code != 409 {
		t.Fatalf("same key, other user: %d", code)
	}

	// Bad input: clear 4xx, nothing written.
	before := countAccounts(t, env)
	for _, tc := range []struct{ body, field string }{
		{`{"name":"eve","role":"overlord","password":"correct-horse-battery"}`, "role"},
		{`{"name":"eve","role":"viewer","password":"short"}`, "password"},
		{`{"name":"eve","role":"viewer","password":""}`, "password"},
		{`{"name":"","role":"viewer","password":"correct-horse-battery"}`, "name"},
		{`{"name":"eve","role":"viewer","password":"correct-horse-battery","admin":true}`, "admin"},
		{`{"name":`, ""},
	} {
		code, e := apiCall(t, env, admin, "POST", "/api/v1/users", tc.body)
		errObj, _ := e["error"].(map[string]any)
		if code != 400 || errObj["field"] != nilIfEmpty(tc.field) || errObj["message"] == "" {
			t.Errorf("%s: %d %v", tc.body, code, e)
		}
	}
	if code, v := apiCall(t, env, admin, "POST", "/api/v1/users", `{"name":"ADA","role":"viewer","password":"correct-horse-battery"}`); code != 409 ||
		!strings.Contains(errMessage(v), `a user named "ada" already exists; user names are case-insensitive, so "ADA" is the same name`) {
		t.Errorf("duplicate name (case-insensitive): %d %q", code, errMessage(v))
	}
	if after := countAccounts(t, env); after != before {
		t.Fatalf("bad input wrote rows: %s → %s", before, after)
	}

	// Update: role, then disable; an admin cannot demote or disable itself.
	id := int(u["id"].(float64))
	if code, v := apiCall(t, env, admin, "POST", fmt.Sprintf("/api/v1/users/%d", id), `{"role":"viewer"}`); code != 200 || v["role"] != "viewer" {
		t.Fatalf("set role: %d %v", code, v)
	}
	code, me := apiCall(t, env, admin, "GET", "/api/v1/me", "")
	if code != 200 {
		t.Fatalf("me: %d", code)
	}
	code, list := apiCall(t, env, admin, "GET", "/api/v1/users?limit=1", "")
	users, _ := list["users"].([]any)
	if code != 200 || len(users) != 1 || list["next_cursor"] == "" {
		t.Fatalf("users page: %d %v", code, list)
	}
	var adminID float64
	_, all := apiCall(t, env, admin, "GET", "/api/v1/users", "")
	for _, x := range all["users"].([]any) {
		if m := x.(map[string]any); m["name"] == me["name"] {
			adminID = m["id"].(float64)
		}
	}
	if code, _ := apiCall(t, env, admin, "POST", fmt.Sprintf("/api/v1/users/%d", int(adminID)), `{"role":"viewer"}`); code != 400 {
		t.Fatalf("self-demotion: %d", code)
	}

	// Tokens: an operator makes its own, lists it, cannot make one for others
	// or above its role; a revoked token stops at once.
	op := env.Token(t, auth.RoleOperator)
	code, tok := apiCall(t, env, op, "POST", "/api/v1/tokens", `{"name":"ci","role":"viewer"}`, "Idempotency-Key", "t1")
	secret, _ := tok["token"].(string)
	if code != 201 || !strings.HasPrefix(secret, "tsr_") || tok["role"] != "viewer" {
		t.Fatalf("create token: %d %v", code, tok)
	}
	if code, _ := apiCall(t, env, op, "POST", "/api/v1/tokens", `{"name":"ci","role":"viewer"}`, "Idempotency-Key", "t1"); code != 409 {
		t.Fatalf("token create repeated with its key: %d", code)
	}
	if code, _ := apiCall(t, env, op, "POST", "/api/v1/tokens", `{"name":"x","role":"admin"}`); code != 400 {
		t.Fatalf("token above the user's role: %d", code)
	}
	if code, _ := apiCall(t, env, op, "POST", "/api/v1/tokens", `{"name":"x","user":"ada"}`); code != 403 {
		t.Fatalf("operator token for another user: %d", code)
	}
	if code, _ := apiCall(t, env, secret, "GET", "/api/v1/assets", ""); code != 200 {
		t.Fatalf("new token does not work: %d", code)
	}
	code, mine := apiCall(t, env, op, "GET", "/api/v1/tokens", "")
	if code != 200 || len(mine["tokens"].([]any)) != 2 { // the operator's own two tokens
		t.Fatalf("own tokens: %d %v", code, mine)
	}
	tid := int(tok["id"].(float64))
	if code, r := apiCall(t, env, op, "POST", fmt.Sprintf("/api/v1/tokens/%d/revoke", tid), ""); code != 200 || r["revoked_at"] == nil {
		t.Fatalf("revoke: %d %v", code, r)
	}
	if code, _ := apiCall(t, env, secret, "GET", "/api/v1/assets", ""); code != 401 {
		t.Fatalf("revoked token still works: %d", code)
	}
	// Admin creates a token for ada (a viewer now) and sees everyone's.
	if code, v := apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"for-ada","user":"ada"}`); code != 201 || v["user"] != "ada" || v["role"] != "viewer" {
		t.Fatalf("admin token for ada: %d %v", code, v)
	}
	// Disabling ada stops her token at once.
	code, adaTokens := apiCall(t, env, admin, "GET", "/api/v1/tokens?user=ada", "")
	if code != 200 || len(adaTokens["tokens"].([]any)) != 1 {
		t.Fatalf("ada's tokens: %d %v", code, adaTokens)
	}
	if code, _ := apiCall(t, env, admin, "POST", fmt.Sprintf("/api/v1/users/%d", id), `{"disabled":true}`); code != 200 {
		t.Fatalf("disable: %d", code)
	}
}

// nilIfEmpty is s as a JSON answer holds it: null when "".
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// GET /api/v1/tokens?user=NAME: admins list that user's tokens; anyone else
// naming another user is refused (403), not answered with their own list as
// if it were the other user's.
func TestTokensListUserFilter(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	viewer := env.Token(t, auth.RoleViewer)
	code, me := apiCall(t, env, viewer, "GET", "/api/v1/me", "")
	if code != http.StatusOK {
		t.Fatalf("me: %d %v", code, me)
	}
	name := me["name"].(string)
	owners := func(out map[string]any) string {
		var names []string
		for _, tk := range out["tokens"].([]any) {
			names = append(names, tk.(map[string]any)["user"].(string))
		}
		return strings.Join(names, ",")
	}
	for _, c := range []struct {
		who, token, query string
		status            int
		owners, field     string
	}{
		{"viewer, own name", viewer, "?user=" + name, http.StatusOK, name, ""},
		{"viewer, own name in other case", viewer, "?user=" + strings.ToUpper(name), http.StatusOK, name, ""},
		{"viewer, no filter", viewer, "", http.StatusOK, name, ""},
		{"viewer, another user", viewer, "?user=admin", http.StatusForbidden, "", "user"},
		{"viewer, an unknown user", viewer, "?user=nobody", http.StatusForbidden, "", "user"},
		{"admin, that user", env.AdminToken(), "?user=" + name, http.StatusOK, name, ""},
		{"admin, an unknown user", env.AdminToken(), "?user=nobody", http.StatusNotFound, "", ""},
	} {
		code, out := apiCall(t, env, c.token, "GET", "/api/v1/tokens"+c.query, "")
		if code != c.status {
			t.Errorf("%s: %d %v, want %d", c.who, code, out, c.status)
			continue
		}
		if c.status == http.StatusOK {
			if got := owners(out); got != c.owners {
				t.Errorf("%s: tokens of %q, want %q", c.who, got, c.owners)
			}
			continue
		}
		er, _ := out["error"].(map[string]any)
		if fmt.Sprint(er["field"]) != c.field && c.field != "" || er["message"] == "" {
			t.Errorf("%s: error %v", c.who, er)
		}
	}
}

// A token scoped below its user's role makes tokens with at most its own
// role, and cannot revoke the user's more powerful tokens.
func TestScopedTokenCannotEscalate(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.Token(t, auth.RoleAdmin)
	code, scoped := apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"read-only","role":"viewer"}`)
	if code != 201 {
		t.Fatalf("scoped token: %d %v", code, scoped)
	}
	ro := scoped["token"].(string)
	before := countAccounts(t, env)
	code, v := apiCall(t, env, ro, "POST", "/api/v1/tokens", `{"name":"escalate","role":"admin"}`)
	if msg := errMessage(v); code != 400 || !strings.Contains(msg, "than the token you are signed in with (viewer)") {
		t.Fatalf("a viewer token asking for an admin token: %d %q", code, msg)
	}
	if after := countAccounts(t, env); after != before {
		t.Fatalf("refused token create wrote: %s → %s", before, after)
	}
	code, made := apiCall(t, env, ro, "POST", "/api/v1/tokens", `{"name":"no-role"}`)
	if code != 201 || made["role"] != "viewer" {
		t.Fatalf("a token made by a viewer token without a role: %d %v", code, made)
	}
	if code, _ := apiCall(t, env, made["token"].(string), "POST", "/api/v1/backfills", `{}`); code != 403 {
		t.Fatalf("the new token may mutate: %d", code)
	}
	// The admin's full token is listed first; the scoped token cannot revoke it.
	code, list := apiCall(t, env, ro, "GET", "/api/v1/tokens", "")
	if code != 200 {
		t.Fatalf("list: %d", code)
	}
	first := list["tokens"].([]any)[0].(map[string]any)
	if first["role"] != "admin" {
		t.Fatalf("first token: %v", first)
	}
	code, v = apiCall(t, env, ro, "POST", fmt.Sprintf("/api/v1/tokens/%d/revoke", int(first["id"].(float64))), "")
	if msg := errMessage(v); code != 403 || !strings.Contains(msg, "cannot revoke a token that may do more (admin)") {
		t.Fatalf("viewer token revoking the admin token: %d %q", code, msg)
	}
	// Nor through the settings page's route, which tokens may call too.
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/settings/tokens/%d/revoke", env.URL, int(first["id"].(float64))), nil)
	req.Header.Set("Authorization", "Bearer "+ro)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer token revoking the admin token through /settings/tokens: %d", resp.StatusCode)
	}
	if code, _ := apiCall(t, env, admin, "GET", "/api/v1/me", ""); code != 200 {
		t.Fatalf("the admin token stopped working: %d", code)
	}
	// It may still revoke a token no stronger than itself.
	if code, _ := apiCall(t, env, ro, "POST", fmt.Sprintf("/api/v1/tokens/%d/revoke", int(made["id"].(float64))), ""); code != 200 {
		t.Fatalf("viewer token revoking a viewer token: %d", code)
	}
}

func errMessage(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// A role left out of a new user, or sent empty to change one, reads as
// what it is ("role is required", "role is empty"), not as the unknown role
// ""; a token's role sent empty is refused, not read as the creator's role;
// and a role is named with its article ("an admin token", not "a admin
// token"). Nothing is written.
func TestAccountsAPIRoleMessages(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.Token(t, auth.RoleAdmin)
	before := countAccounts(t, env)
	code, v := apiCall(t, env, admin, "POST", "/api/v1/users", `{"name":"eve","password":"correct-horse-battery"}`)
	if e, _ := v["error"].(map[string]any); code != 400 || e["field"] != "role" || !strings.Contains(errMessage(v), "role is required: viewer, operator or admin") {
		t.Errorf("user without a role: %d %v", code, v)
	}
	_, me := apiCall(t, env, admin, "GET", "/api/v1/users", "")
	id := int(me["users"].([]any)[0].(map[string]any)["id"].(float64))
	code, v = apiCall(t, env, admin, "POST", fmt.Sprintf("/api/v1/users/%d", id), `{"role":""}`)
	if e, _ := v["error"].(map[string]any); code != 400 || e["field"] != "role" || !strings.Contains(errMessage(v), "role is empty") || !strings.Contains(errMessage(v), "leave role out") {
		t.Errorf("role sent empty: %d %v", code, v)
	}
	// A token's role sent empty is not "the most I may have": a script
	// whose ROLE is unset would get an admin token.
	code, v = apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"ci","role":""}`)
	if e, _ := v["error"].(map[string]any); code != 400 || e["field"] != "role" || !strings.Contains(errMessage(v), "role is empty") || !strings.Contains(errMessage(v), "leave role out") {
		t.Errorf("token role sent empty: %d %v", code, v)
	}
	code, v = apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"ci","user":"nobody"}`)
	if e, _ := v["error"].(map[string]any); code != 400 || e["field"] != "user" || !strings.Contains(errMessage(v), `no user "nobody"`) || !strings.Contains(errMessage(v), "GET /api/v1/users") {
		t.Errorf("token for an unknown user: %d %v", code, v)
	}
	if after := countAccounts(t, env); after != before {
		t.Fatalf("refused requests wrote: %s → %s", before, after)
	}
	code, scoped := apiCall(t, env, admin, "POST", "/api/v1/tokens", `{"name":"read-only","role":"viewer"}`)
	if code != 201 {
		t.Fatalf("scoped token: %d %v", code, scoped)
	}
	ro := scoped["token"].(string)
	_, v = apiCall(t, env, ro, "POST", "/api/v1/tokens", `{"name":"escalate","role":"admin"}`)
	if msg := errMessage(v); !strings.Contains(msg, "or an admin token to create it") || strings.Contains(msg, "a admin") {
		t.Errorf("escalation message: %q", msg)
	}
	_, list := apiCall(t, env, ro, "GET", "/api/v1/tokens", "")
	first := list["tokens"].([]any)[0].(map[string]any)
	_, v = apiCall(t, env, ro, "POST", fmt.Sprintf("/api/v1/tokens/%d/revoke", int(first["id"].(float64))), "")
	if msg := errMessage(v); !strings.Contains(msg, "use an admin token") || strings.Contains(msg, "a admin") {
		t.Errorf("revoke message: %q", msg)
	}
}
