package handlers_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestStreamEndsWithItsCredential: an open event stream re-checks the
// credential it was opened with and ends once that is no longer valid: a
// revoked token, an expired token, an ended session, a disabled user. A
// stream whose credential stays valid stays open.
func TestStreamEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	env.Handler.StreamCredentialCheck = 50 * time.Millisecond
	admin := env.AdminToken()
	// open opens a stream and returns a channel closed when the server ends it.
	open := func(c *http.Client, token string) <-chan struct{} {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/backfills/stream", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: HTTP %d", resp.StatusCode)
		}
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		return ended
	}
	// The bound: a few check periods, far below the heartbeat and the
	// stream's 30-minute lifetime.
	waitEnded := func(what string, ended <-chan struct{}) {
		t.Helper()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream of %s is still open", what)
		}
	}

	control := open(http.DefaultClient, env.Token(t, auth.RoleViewer))

	// A revoked token.
	uid := env.CreateUser(t, "revokee", auth.RoleViewer, testkit.TestPassword)
	tok := env.TokenFor(t, uid, "")
	ended := open(http.DefaultClient, tok)
	ts, err := env.Store.ListTokens(t.Context(), uid)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tokens of revokee: %v %v", ts, err)
	}
	if code, out := apiCall(t, env, admin, "POST", "/api/v1/tokens/"+strconv.FormatInt(ts[0].ID, 10)+"/revoke", ""); code != http.StatusOK {
		t.Fatalf("revoke: HTTP %d %v", code, out)
	}
	waitEnded("a revoked token", ended)

	// A token that expires while its stream is open.
	soon := time.Now().Add(1500 * time.Millisecond)
	secret, prefix, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.CreateToken(t.Context(), uid, "brief", prefix, hash, "", &soon, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	waitEnded("an expiring token", open(http.DefaultClient, secret))

	// An ended session (signed out).
	env.CreateUser(t, "leaver", auth.RoleViewer, testkit.TestPassword)
	session := env.Login(t, "leaver", testkit.TestPassword)
	ended = open(session, "")
	if resp := env.SessionPost(t, session, "/logout", nil); resp.StatusCode >= 400 {
		t.Fatalf("sign out: HTTP %d", resp.StatusCode)
	}
	waitEnded("a session that signed out", ended)

	// A disabled user: its token's and its session's streams end.
	did := env.CreateUser(t, "disablee", auth.RoleViewer, testkit.TestPassword)
	byToken := open(http.DefaultClient, env.TokenFor(t, did, ""))
	bySession := open(env.Login(t, "disablee", testkit.TestPassword), "")
	if code, out := apiCall(t, env, admin, "POST", "/api/v1/users/"+strconv.FormatInt(did, 10), `{"disabled":true}`); code != http.StatusOK {
		t.Fatalf("disable: HTTP %d %v", code, out)
	}
	waitEnded("a disabled user's token", byToken)
	waitEnded("a disabled user's session", bySession)

	// All the while, a stream with a valid token stayed open.
	select {
	case <-control:
		t.Fatal("the stream of a valid token ended")
	default:
	}
}
