package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestCreateUserNameTakenInAnotherCase: user names are case-insensitive;
// creating "OP1" when "op1" exists names the account as stored and says
// why "OP1" counts as taken.
func TestCreateUserNameTakenInAnotherCase(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: gapsWS})
	env.CreateUser(t, "op1", auth.RoleOperator, testkit.TestPassword)
	admin := env.Client(t, auth.RoleAdmin)
	for _, c := range []struct{ name, want, not string }{
		{"OP1", `a user named "op1" already exists; user names are case-insensitive, so "OP1" is the same name`, `"OP1" already exists`},
		{"op1", `a user named "op1" already exists`, "case-insensitive"},
	} {
		resp := env.SessionPost(t, admin, "/admin/users", url.Values{"name": {c.name}, "role": {"viewer"}, "password": {testkit.TestPassword}})
		doc := pgDoc(t, resp)
		resp.Body.Close()
		msg := doc.Find(`[data-testid="form-error"]`).Text()
		if resp.StatusCode != http.StatusConflict || !strings.Contains(msg, c.want) || strings.Contains(msg, c.not) {
			t.Errorf("create %s: %d %q, want %q", c.name, resp.StatusCode, msg, c.want)
		}
		if v := doc.Find(`input[name="name"]`).AttrOr("value", ""); v != c.name {
			t.Errorf("create %s: the form keeps %q", c.name, v)
		}
	}
}

// The admin users forms redirect on success too, with their notice once.
func TestAdminUserFormsRedirect(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.Client(t, auth.RoleAdmin)
	r := env.SessionPost(t, admin, "/admin/users", url.Values{"name": {"frank"}, "role": {"viewer"}, "password": {testkit.TestPassword}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin/users" {
		t.Fatalf("create user: %d → %q, want 303 → /admin/users", r.StatusCode, r.Header.Get("Location"))
	}
	_, doc := pgGet(t, env, admin, "/admin/users")
	if got := doc.Find(`[data-testid="notice"]`).Text(); got != "Created user frank." {
		t.Fatalf("notice %q", got)
	}
	if _, doc := pgGet(t, env, admin, "/admin/users"); doc.Find(`[data-testid="notice"]`).Length() != 0 {
		t.Fatalf("the notice shows again on reload")
	}
	// Errors are answered directly, with the form's values.
	r = env.SessionPost(t, admin, "/admin/users", url.Values{"name": {"frank"}, "role": {"viewer"}, "password": {testkit.TestPassword}})
	if r.StatusCode != http.StatusConflict {
		t.Fatalf("duplicate user: %d", r.StatusCode)
	}
}

// TestAdminOwnRoleIsNoForm: an admin's own row on the users page shows its
// role as text, as it offers no Disable: changing it could only be refused
// ("you cannot remove your own admin role"); other rows keep their form.
func TestAdminOwnRoleIsNoForm(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.CreateUser(t, "frank", auth.RoleViewer, testkit.TestPassword)
	admin := env.Client(t, auth.RoleAdmin)
	_, doc := pgGet(t, env, admin, "/admin/users")
	me := strings.TrimSpace(doc.Find(`[data-testid="current-user"]`).Contents().First().Text())
	own := doc.Find(`[data-testid="user-row"][data-user="` + me + `"]`)
	if own.Length() != 1 || own.Find(`select[name="role"], form[action$="/role"]`).Length() != 0 || own.Find(`[data-testid="own-role"]`).Text() != "admin" {
		t.Errorf("own row (%q): %q", me, own.Text())
	}
	if doc.Find(`[data-testid="user-row"][data-user="frank"] form[action$="/role"] select[name="role"]`).Length() != 1 {
		t.Errorf("frank's row has no role form: %q", doc.Find(`[data-testid="user-row"][data-user="frank"]`).Text())
	}
}
