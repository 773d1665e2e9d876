package testkit

// Signing in from tests. Once accounts exist, every viewer page and API
// endpoint needs credentials:
//
//	env.Get(path) / env.Post(t, path, body)  act as an admin (bearer token)
//	env.Client(t, auth.RoleOperator)     an *http.Client holding a real
//	                                         session (signed in through /login)
//	env.Token(t, auth.RoleViewer)        a bearer token of a user with that role
//	env.Anon()                               a client with a cookie jar and no credentials
//	env.CreateUser(t, name, role, password)  a user written directly in the store
//	env.Login(t, name, password)             session client for an existing user
//	env.CSRF(t, client)                      the CSRF token the client's cookie holds
//
// Session clients do not follow redirects (tests see 303s as they are) and
// send X-CSRF-Token on POST through SessionPost.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
)

// TestPassword is the password of users made by Client and Token.
const TestPassword = "correct horse battery"

type accounts struct {
	mu         sync.Mutex
	adminToken string
	n          int
	prefix     string // of the test users' names ("" is "test")
}

// AdminToken returns (creating once) a bearer token of the test admin.
func (e *Env) AdminToken() string {
	e.acct.mu.Lock()
	tok := e.acct.adminToken
	e.acct.mu.Unlock()
	if tok != "" {
		return tok
	}
	tok = e.Token(e.T, auth.RoleAdmin)
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	if e.acct.adminToken == "" {
		e.acct.adminToken = tok
	}
	return e.acct.adminToken
}

// hashes holds the argon2id hash of each password CreateUser was given, by
// password: hashing costs 50 ms of CPU (twice that under -race) and nearly
// every test makes users of TestPassword; one hash (one salt) serves them
// all, and every sign-in still checks it in full.
var hashes sync.Map

func passwordHash(t testing.TB, password string) string {
	t.Helper()
	if h, ok := hashes.Load(password); ok {
		return h.(string)
	}
	h, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := hashes.LoadOrStore(password, h)
	return h2.(string)
}

// CreateUser writes a user directly into the store.
func (e *Env) CreateUser(t testing.TB, name string, role auth.Role, password string) int64 {
	t.Helper()
	hash := passwordHash(t, password)
	u, err := e.Store.CreateUser(context.Background(), name, role.String(), hash, "test", time.Now())
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u.ID
}

func (e *Env) nextName(role auth.Role) string {
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	e.acct.n++
	p := e.acct.prefix
	if p == "" {
		p = "test"
	}
	return fmt.Sprintf("%s-%s-%d", p, role, e.acct.n)
}

// Anon returns a client with a cookie jar, no credentials, that does not
// follow redirects.
func (e *Env) Anon() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: e.transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// transport is the connections of the env's clients: its server's own
// (closed with it), not http.DefaultTransport, whose idle connections the
// Close of every other test's httptest server closes, breaking a request
// of this test that was about to reuse one ("http: CloseIdleConnections
// called", seen on a POST /login under make test). An Env of a URL alone
// (a server a test runs as a process) gets connections of its own.
func (e *Env) transport() http.RoundTripper {
	if e.Server == nil {
		return http.DefaultTransport.(*http.Transport).Clone()
	}
	return e.Server.Client().Transport
}

// CSRF returns the CSRF token of the client's cookie, fetching /login first
// when it has none.
func (e *Env) CSRF(t testing.TB, c *http.Client) string {
	t.Helper()
	u, _ := url.Parse(e.URL + "/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "_csrf" {
			return ck.Value
		}
	}
	resp, err := c.Get(e.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "_csrf" {
			return ck.Value
		}
	}
	t.Fatal("no _csrf cookie after GET /login")
	return ""
}

// Login signs name in through the real /login form (with its CSRF token) and
// returns the session client.
func (e *Env) Login(t testing.TB, name, password string) *http.Client {
	t.Helper()
	c := e.Anon()
	resp := e.SessionPost(t, c, "/login", url.Values{"name": {name}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("login %s: %s %.300s", name, resp.Status, b)
	}
	return c
}

// Client returns a signed-in session client of a new user with role.
func (e *Env) Client(t testing.TB, role auth.Role) *http.Client {
	t.Helper()
	name := e.nextName(role)
	e.CreateUser(t, name, role, TestPassword)
	return e.Login(t, name, TestPassword)
}

// Token returns a bearer token of a new user with role.
func (e *Env) Token(t testing.TB, role auth.Role) string {
	t.Helper()
	name := e.nextName(role)
	id := e.CreateUser(t, name, role, TestPassword)
	return e.TokenFor(t, id, "")
}

// TokenFor creates a token for user id (role "" = the user's role).
func (e *Env) TokenFor(t testing.TB, userID int64, role string) string {
	t.Helper()
	secret, prefix, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.CreateToken(context.Background(), userID, "test", prefix, hash, role, nil, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	return secret
}

// SessionPost posts a form with the client's CSRF token (form field _csrf).
func (e *Env) SessionPost(t testing.TB, c *http.Client, path string, form url.Values) *http.Response {
	t.Helper()
	form = maps.Clone(form) // the caller's values stay as they were (and safe to share between goroutines)
	if form == nil {
		form = url.Values{}
	}
	if form.Get("_csrf") == "" {
		form.Set("_csrf", e.CSRF(t, c))
	}
	resp, err := c.Post(e.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// BearerDo sends a request with a bearer token.
func (e *Env) BearerDo(t testing.TB, method, path, token, contentType, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second, Transport: e.transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// BrowserSignIn signs a new user with role in through the /login page of the
// chromedp browser ctx (from Browser) and returns the user name.
func (e *Env) BrowserSignIn(t testing.TB, ctx context.Context, role auth.Role) string {
	t.Helper()
	name := e.nextName(role)
	e.CreateUser(t, name, role, TestPassword)
	BrowserLogin(t, ctx, e.URL, name, TestPassword)
	return name
}

// SignedInBrowser is a new headless browser (Browser) with a new user of
// role signed in (BrowserSignIn).
func (e *Env) SignedInBrowser(t testing.TB, role auth.Role) context.Context {
	t.Helper()
	ctx := Browser(t)
	e.BrowserSignIn(t, ctx, role)
	return ctx
}

// SeededBrowser starts a server on the demo workspace with its history
// seeded (Options.Seed) and a browser with a new user of role signed in.
func SeededBrowser(t testing.TB, role auth.Role) (*Env, context.Context) {
	t.Helper()
	env := New(t, Options{Seed: true})
	return env, env.SignedInBrowser(t, role)
}

// BrowserLogin signs the account name in with password through the /login
// page of the server at baseURL, in the chromedp browser ctx.
func BrowserLogin(t testing.TB, ctx context.Context, baseURL, name, password string) {
	t.Helper()
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	err := chromedp.Do(ctx,
		chromedp.Navigate(baseURL+"/login"),
		chromedp.WaitVisible(css(`input[name="name"]`)),
		chromedp.SendKeys(css(`input[name="name"]`), name),
		chromedp.SendKeys(css(`input[name="password"]`), password),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="current-user"]`)),
	)
	if err != nil {
		t.Fatalf("sign in %s in the browser: %v", name, err)
	}
}
