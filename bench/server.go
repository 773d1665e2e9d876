package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"sync/atomic"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/web"
)

// startPageServer serves the workspace loaded from store through the real
// router, to anonymous viewers (the benchmarks read pages without signing
// in); eng, when not nil, is the engine whose backfills the pages show.
// Its reads run at tessera serve's default priority.
func startPageServer(store *db.Store, loaded *handlers.Workspace, eng *jobs.Engine) *httptest.Server {
	return httptest.NewServer(pageHandler(store, loaded, eng, web.DefaultReadNice))
}

// pageHandler is the real router of startPageServer, its reads at
// readNice (web.Options.ReadNice).
func pageHandler(store *db.Store, loaded *handlers.Workspace, eng *jobs.Engine, readNice int) http.Handler {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, handlers.AuthConfig{AnonymousViewer: true})
	h.Engine = eng
	return web.NewServer(h, log, web.Options{ReadNice: readNice}).Echo
}

// pageLabels serves next, labelling the CPU of each request whose path is
// one of kinds (set once the paths are known) with the label page=kind,
// so that a CPU profile splits by page: go tool pprof -tags, or -tagfocus
// page=overview. Labels cost nothing when no profile is taken.
type pageLabels struct {
	next  http.Handler
	kinds atomic.Pointer[map[string]string]
}

// setReads labels the paths of reads by their kinds.
func (p *pageLabels) setReads(reads []mixedRead) {
	m := make(map[string]string, len(reads))
	for _, r := range reads {
		m[r.path] = r.kind
	}
	p.kinds.Store(&m)
}

func (p *pageLabels) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := "other"
	if m := p.kinds.Load(); m != nil {
		if k, ok := (*m)[r.URL.RequestURI()]; ok {
			kind = k
		}
	}
	pprof.Do(r.Context(), pprof.Labels("part", "read", "page", kind), func(ctx context.Context) {
		p.next.ServeHTTP(w, r.WithContext(ctx))
	})
}
