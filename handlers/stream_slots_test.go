package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestStreamCapPerPrincipal: one viewer cannot hold every live stream. With
// N streams per user, the user's streams count together whatever holds them
// (several API tokens, a browser session): the N+1st, from a fresh token or
// a fresh sign-in, is refused with 429, a Retry-After and a message saying
// why and what to do; another viewer still gets one; a stream closed gives
// its slot back. The server's own bound answers 503.
func TestStreamCapPerPrincipal(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	const per = 3
	env.Handler.MaxStreamsPerUser = per
	env.Handler.MaxStreams = per + 2
	uid := env.CreateUser(t, "streamer", auth.RoleViewer, testkit.TestPassword)
	tokA, tokB := env.TokenFor(t, uid, ""), env.TokenFor(t, uid, "")
	session := env.Login(t, "streamer", testkit.TestPassword)
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	// open opens a stream that ends with the test (or when ctx is done).
	open := func(ctx context.Context, c *http.Client, token string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/backfills/stream", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	message := func(resp *http.Response) string {
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		b := readBody(t, resp)
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			return b
		}
		return body.Error.Message
	}
	first := make([]context.CancelFunc, per)
	defer func() {
		for _, c := range first {
			c()
		}
	}()
	// The user's streams: two tokens and a browser session.
	holders := []struct {
		c     *http.Client
		token string
	}{{http.DefaultClient, tokA}, {http.DefaultClient, tokB}, {session, ""}}
	for i := range per {
		var ctx context.Context
		ctx, first[i] = context.WithCancel(t.Context())
		if resp := open(ctx, holders[i].c, holders[i].token); resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of %d: HTTP %d %s", i+1, per, resp.StatusCode, message(resp))
		}
	}
	// A fresh token, or a fresh sign-in, of the same user gets no more.
	viewer := env.TokenFor(t, uid, "")
	resp := open(t.Context(), http.DefaultClient, viewer)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream %d of one user, from a new token: HTTP %d (Retry-After %q), want 429 with Retry-After", per+1, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	msg := message(resp)
	for _, want := range []string{"too many live pages", "your account already holds 3 live update streams", "all its browser sessions and API tokens together", "close other tabs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	if resp := open(t.Context(), env.Login(t, "streamer", testkit.TestPassword), ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream %d of one user, from a new sign-in: HTTP %d %s, want 429", per+1, resp.StatusCode, message(resp))
	}
	// Another viewer, signed in with a session, still gets a stream.
	other := env.Client(t, auth.RoleViewer)
	if resp := open(t.Context(), other, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("another viewer's stream: HTTP %d %s", resp.StatusCode, message(resp))
	}
	// The server's bound (per+2): one more, then 503.
	if resp := open(t.Context(), other, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("another viewer's second stream: HTTP %d %s", resp.StatusCode, message(resp))
	}
	third := env.Token(t, auth.RoleViewer)
	if resp := open(t.Context(), http.DefaultClient, third); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stream beyond the server's bound: HTTP %d, want 503", resp.StatusCode)
	} else if m := message(resp); !strings.Contains(m, "the most live update streams it may (5)") {
		t.Errorf("server bound refusal %q", m)
	}
	// Closing one of the first viewer's streams frees its slot.
	first[0]()
	testkit.Eventually(t, 10*time.Second, "a stream slot to be free after closing a stream", func() bool {
		resp := open(t.Context(), http.DefaultClient, viewer)
		if resp.StatusCode == http.StatusOK {
			return true
		}
		if msg := message(resp); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("after closing a stream: HTTP %d %s", resp.StatusCode, msg)
		}
		return false
	})
}
