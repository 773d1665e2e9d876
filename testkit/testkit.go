package testkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/demo"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/web"
)

// Env is a running Tessera server for a test.
type Env struct {
	T       testing.TB
	Store   *db.Store
	Handler *handlers.Handler
	Echo    *echo.Echo
	Metrics http.Handler // the Prometheus scrape handler (a --metrics-addr listener serves it)
	Server  *httptest.Server
	URL     string
	WS      *handlers.Workspace
	acct    accounts // test users and tokens, see auth.go
}

// Options tune New.
type Options struct {
	WorkspaceYAML string // empty: the embedded default workspace
	Seed          bool   // seed demo history
	// Auth configures accounts (nil: defaults, without the failed-login delay).
	Auth *handlers.AuthConfig
	// Web assembles the router (metrics access).
	Web web.Options
	// DB is the store's location (a postgres:// URL: several servers of a
	// test on one database); empty: a fresh SQLite file in t.TempDir().
	DB string
	// PageSize is the page size of that fresh SQLite file (0: SQLite's
	// default).
	PageSize int
}

// sharedEnvs numbers the servers on a database of Options.DB.
var sharedEnvs atomic.Int64

// New starts a server on a fresh database file in t.TempDir().
func New(t testing.TB, opt Options) *Env {
	t.Helper()
	loc := opt.DB
	copied := false // the demo history comes with a copy of the seeded database
	if loc == "" {
		loc = filepath.Join(t.TempDir(), "tessera.db")
		if opt.Seed && opt.WorkspaceYAML == "" && opt.PageSize == 0 {
			if err := copySeeded(loc); err != nil {
				t.Fatalf("seeded database: %v", err)
			}
			copied = true
		}
	}
	store, err := db.OpenWith(loc, db.Options{PageSize: opt.PageSize})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	ws := catalog.DefaultWorkspace()
	source := "embedded default workspace"
	if opt.WorkspaceYAML != "" {
		ws, err = catalog.ParseWorkspace("test.yaml", []byte(opt.WorkspaceYAML))
		if err != nil {
			t.Fatalf("parse workspace: %v", err)
		}
		source = "test.yaml"
	}
	ctx := context.Background()
	now := time.Now()
	loaded, err := handlers.LoadWorkspace(ctx, store, ws, source, "test", now)
	if err != nil {
		t.Fatalf("load workspace: %v", err)
	}
	if opt.Seed && !copied {
		if _, err := demo.Seed(ctx, store, loaded.Workspace, loaded.IDs, now); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := handlers.New(store, loaded, log)
	acfg := handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1}
	if opt.Auth != nil {
		acfg = *opt.Auth
	}
	h.Auth = handlers.NewAuth(store, acfg)
	built := web.NewServer(h, log, opt.Web)
	e := built.Echo
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	env := &Env{T: t, Store: store, Handler: h, Echo: e, Metrics: built.Metrics, Server: srv, URL: srv.URL, WS: loaded}
	if opt.DB != "" {
		// Other servers of the test may share the database: their test
		// users must not take the same names.
		env.acct.prefix = fmt.Sprintf("test%d", sharedEnvs.Add(1))
	}
	env.AdminToken() // created up front, so that tests counting rows see no surprise writes
	return env
}

// Get requests path from the server as an admin (bearer token; see auth.go
// for other identities).
func (e *Env) Get(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, e.URL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.AdminToken())
	return http.DefaultClient.Do(req)
}

// GetBody is Get with the whole body read (the response's body is closed);
// the test fails when the request cannot be made.
func (e *Env) GetBody(t testing.TB, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := e.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp, b
}

// GetText GETs path as client c (a session's, or Anon) and returns the
// status and the body (Fetch).
func (e *Env) GetText(t testing.TB, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, body := Fetch(t, c, http.MethodGet, e.URL+path, "")
	return resp.StatusCode, body
}

// Fetch sends a request of method without a body to url with c, with
// token as a bearer token ("": none), and returns the answer with its body
// read (and closed); t fails when no answer comes.
func Fetch(t testing.TB, c *http.Client, method, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp := Send(t, c, req)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Send sends req with c, the headers hdr (name, value pairs) set on it
// first, and returns the answer (the caller closes its body); t fails when
// no answer comes.
func Send(t testing.TB, c *http.Client, req *http.Request, hdr ...string) *http.Response {
	t.Helper()
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// GetNoBody GETs url with c and returns the answer with its body closed,
// for its status and headers (t fails when no answer comes).
func GetNoBody(t testing.TB, c *http.Client, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return DoNoBody(t, c, req)
}

// DoNoBody sends req with c and returns the answer with its body closed,
// for its status and headers (t fails when no answer comes).
func DoNoBody(t testing.TB, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Post sends a JSON body to path as an admin (bearer token).
func (e *Env) Post(t testing.TB, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
