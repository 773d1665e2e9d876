package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/jobs"
)

// StartEngine starts the backfill engine (controller loop) for the server,
// stopped when the test ends. Zero options get a fast tick.
func (e *Env) StartEngine(t testing.TB, opts jobs.Options) *jobs.Engine {
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
	wsf := func() (*catalog.Workspace, map[string]int64) {
		w := h.Workspace()
		return w.Workspace, w.IDs
	}
	eng, err := jobs.NewEngine(context.Background(), e.Store, wsf, h.Log, opts)
	if err != nil {
		t.Fatalf("start engine: %v", err)
	}
	h.Engine = eng
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return eng
}
