// Package testkit builds real test environments: a SQLite file in the test's
// temporary directory, the embedded (or a given) workspace, the real router
// behind an httptest server. Only tests import it.
package testkit

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/web"
)

// Env is a running Tessera server for a test.
type Env struct {
	T       testing.TB
	Store   *db.Store
	Handler *handlers.Handler
	Echo    *echo.Echo
	Server  *httptest.Server
	URL     string
	WS      *handlers.Workspace
}

// Options tune New.
type Options struct {
	WorkspaceYAML string // empty: the embedded default workspace
	Seed          bool   // seed demo history
}

// New starts a server on a fresh database file in t.TempDir().
func New(t testing.TB, opt Options) *Env {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "tessera.db"))
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
	if opt.Seed {
		if _, err := jobs.SeedDemo(ctx, store, loaded.Workspace, loaded.IDs, now); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := handlers.New(store, loaded, log)
	e := web.New(h, log)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &Env{T: t, Store: store, Handler: h, Echo: e, Server: srv, URL: srv.URL, WS: loaded}
}

// Get requests path from the server.
func (e *Env) Get(path string) (*http.Response, error) {
	return http.Get(e.URL + path)
}

// Post sends a JSON body to path.
func (e *Env) Post(t testing.TB, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(e.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
