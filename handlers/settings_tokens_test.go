package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// Creating a token answers with a redirect (post/redirect/get); the page it
// leads to shows the secret once. Reloading it creates nothing and shows no
// secret.
func TestCreateTokenRedirectsAndShowsTheSecretOnce(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	op := env.Client(t, auth.RoleOperator)
	count := func() (n int) {
		env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM api_tokens WHERE name = 'ci'`)
		return n
	}
	r := env.SessionPost(t, op, "/settings/tokens", url.Values{"name": {"ci"}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/settings/tokens" {
		t.Fatalf("create token: %d → %q, want 303 → /settings/tokens", r.StatusCode, r.Header.Get("Location"))
	}
	_, doc := pgGet(t, env, op, "/settings/tokens")
	secret := doc.Find(`[data-testid="new-token-secret"]`).Text()
	if !strings.HasPrefix(secret, "tsr_") {
		t.Fatalf("the redirected page shows no secret: %q", secret)
	}
	if r := env.BearerDo(t, "GET", "/api/v1/me", secret, "", ""); r.StatusCode != http.StatusOK {
		t.Fatalf("the shown secret does not work: %d", r.StatusCode)
	}
	for range 2 {
		if _, doc := pgGet(t, env, op, "/settings/tokens"); doc.Find(`[data-testid="new-token"]`).Length() != 0 {
			t.Fatalf("a reload shows the secret again")
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d tokens named ci, want 1", n)
	}
	// A refused form is answered directly: nothing was created.
	if r := env.SessionPost(t, op, "/settings/tokens", url.Values{"name": {" "}}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty name: %d", r.StatusCode)
	}
}
