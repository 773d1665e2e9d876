package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// A signed-in user changes their own password on /settings/password: a bad
// form is refused at its field and changes nothing; a good one redirects with
// a notice, keeps this session, signs the others out, and only the new
// password signs in afterwards.
func TestChangeOwnPassword(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	veraID := env.CreateUser(t, "vera", auth.RoleViewer, testkit.TestPassword)
	here := env.Login(t, "vera", testkit.TestPassword)
	elsewhere := env.Login(t, "vera", testkit.TestPassword)
	const next = "a much better secret"

	hash := func() (h string) {
		env.Store.RawReader().Get(&h, `SELECT password_hash FROM users WHERE name = 'vera'`)
		return h
	}
	before := hash()
	for _, c := range []struct {
		name          string
		form          url.Values
		status        int
		field, substr string
	}{
		{"no current", url.Values{"new_password": {next}, "confirm_password": {next}}, 400, "current_password", "enter your current password"},
		{"wrong current", url.Values{"current_password": {"not it at all"}, "new_password": {next}, "confirm_password": {next}}, 400, "current_password", "not right"},
		{"too short", url.Values{"current_password": {testkit.TestPassword}, "new_password": {"short"}, "confirm_password": {"short"}}, 400, "new_password", "at least"},
		{"differ", url.Values{"current_password": {testkit.TestPassword}, "new_password": {next}, "confirm_password": {next + "!"}}, 400, "confirm_password", "differ"},
		{"same", url.Values{"current_password": {testkit.TestPassword}, "new_password": {testkit.TestPassword}, "confirm_password": {testkit.TestPassword}}, 400, "new_password", "same"},
	} {
		r := env.SessionPost(t, here, "/settings/password", c.form)
		doc := pgDoc(t, r)
		msg := doc.Find(`[data-testid="form-error"]`)
		if r.StatusCode != c.status || msg.AttrOr("data-field", "") != c.field || !strings.Contains(msg.Text(), c.substr) {
			t.Errorf("%s: %d field %q %q", c.name, r.StatusCode, msg.AttrOr("data-field", ""), msg.Text())
		}
		if doc.Find(`input[name="`+c.field+`"][aria-invalid]`).Length() != 1 {
			t.Errorf("%s: the %s input is not marked invalid", c.name, c.field)
		}
		if hash() != before {
			t.Fatalf("%s: a refused form changed the password", c.name)
		}
	}
	// Without a CSRF token nothing happens either.
	resp, err := here.PostForm(env.URL+"/settings/password", url.Values{"current_password": {testkit.TestPassword}, "new_password": {next}, "confirm_password": {next}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || hash() != before {
		t.Fatalf("without CSRF: %d", resp.StatusCode)
	}

	r := env.SessionPost(t, here, "/settings/password", url.Values{"current_password": {testkit.TestPassword}, "new_password": {next}, "confirm_password": {next}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/settings/password" {
		t.Fatalf("change: %d → %q", r.StatusCode, r.Header.Get("Location"))
	}
	code, doc := pgGet(t, env, here, "/settings/password")
	if code != http.StatusOK || !strings.Contains(doc.Find(`[data-testid="notice"]`).Text(), "Password changed") {
		t.Fatalf("after the change: %d %q", code, doc.Find(`[data-testid="notice"]`).Text())
	}
	if _, doc := pgGet(t, env, here, "/settings/password"); doc.Find(`[data-testid="notice"]`).Length() != 0 {
		t.Fatal("the notice shows twice")
	}
	// The other session was signed out; this one was not.
	if resp, err := elsewhere.Get(env.URL + "/settings/tokens"); err != nil || resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("the other session still works: %v %v", resp.StatusCode, err)
	}
	if code, _ := pgGet(t, env, here, "/settings/tokens"); code != http.StatusOK {
		t.Fatalf("this session was signed out: %d", code)
	}
	// Only the new password signs in.
	if r := env.SessionPost(t, env.Anon(), "/login", url.Values{"name": {"vera"}, "password": {testkit.TestPassword}}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the old password still signs in: %d", r.StatusCode)
	}
	env.Login(t, "vera", next)
	var n int
	env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM events WHERE type = 'user.password_changed' AND subject = 'user:vera' AND actor = 'vera'`)
	if n != 1 {
		t.Fatalf("%d password_changed events", n)
	}
	// An API token, even of the user, does not change the sign-in password.
	tok := env.TokenFor(t, veraID, "")
	r = env.BearerDo(t, "POST", "/settings/password", tok, "application/x-www-form-urlencoded",
		url.Values{"current_password": {next}, "new_password": {"yet another secret"}, "confirm_password": {"yet another secret"}}.Encode())
	if body := readBody(t, r); r.StatusCode != http.StatusForbidden || !strings.Contains(body, "API token cannot change a password") || hash() == before {
		t.Fatalf("token: %d %.300s", r.StatusCode, body)
	}
	changed := hash()
	// Wrong current passwords run into the sign-in limit, said in words.
	var last *http.Response
	for range 6 {
		last = env.SessionPost(t, here, "/settings/password", url.Values{"current_password": {"still not it"}, "new_password": {"another long secret"}, "confirm_password": {"another long secret"}})
	}
	msg := pgDoc(t, last).Find(`[data-testid="form-error"]`)
	if last.StatusCode != http.StatusTooManyRequests || msg.AttrOr("data-field", "") != "current_password" || !strings.Contains(msg.Text(), "too many wrong passwords") {
		t.Fatalf("lockout: %d %q", last.StatusCode, msg.Text())
	}
	if hash() != changed {
		t.Fatal("a refused change changed the password")
	}
	// Anonymous visitors are sent to sign in.
	if resp, err := env.Anon().Get(env.URL + "/settings/password"); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("anonymous: %v %v", resp.StatusCode, err)
	}
}
