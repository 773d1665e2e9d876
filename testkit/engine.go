package testkit

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// NewEngine makes the backfill engine for the server and attaches it to the
// handler, without running its controller loop (RunEngine does). log nil:
// the server's log. Zero options get a fast tick.
func (e *Env) NewEngine(t testing.TB, log *slog.Logger, opts jobs.Options) *jobs.Engine {
	t.Helper()
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	if opts.BaseURL == "" {
		opts.BaseURL = e.URL
	}
	h := e.Handler
	if opts.ObserveAttempt == nil {
		opts.ObserveAttempt = h.ObserveAttempt
	}
	if log == nil {
		log = h.Log
	}
	wsf := func() (*catalog.Workspace, map[string]int64) {
		w := h.Workspace()
		return w.Workspace, w.IDs
	}
	eng, err := jobs.NewEngine(context.Background(), e.Store, wsf, log, opts)
	if err != nil {
		t.Fatalf("start engine: %v", err)
	}
	h.Engine = eng
	return eng
}

// RunEngine runs eng's controller loop until the test ends.
func RunEngine(t testing.TB, eng *jobs.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
}

// CreateBackfill creates the backfill req asks for with eng, as "tester";
// the test fails when the engine refuses it.
func CreateBackfill(t testing.TB, eng *jobs.Engine, req jobs.Request) db.Backfill {
	t.Helper()
	cr, err := eng.Create(context.Background(), req, "", "tester")
	if err != nil {
		t.Fatalf("create backfill: %v", err)
	}
	return cr.Backfill
}

// StartEngine starts the backfill engine (controller loop) for the server,
// stopped when the test ends. Zero options get a fast tick.
func (e *Env) StartEngine(t testing.TB, opts jobs.Options) *jobs.Engine {
	t.Helper()
	eng := e.NewEngine(t, nil, opts)
	RunEngine(t, eng)
	return eng
}
