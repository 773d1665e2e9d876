package bench

import (
	"io"
	"log/slog"
	"net/http/httptest"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/web"
)

// startPageServer serves the workspace loaded from store through the real
// router, to anonymous viewers (the benchmarks read pages without signing
// in); eng, when not nil, is the engine whose backfills the pages show.
func startPageServer(store *db.Store, loaded *handlers.Workspace, eng *jobs.Engine) *httptest.Server {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, handlers.AuthConfig{AnonymousViewer: true})
	h.Engine = eng
	return httptest.NewServer(web.New(h, log))
}
