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

// RunEngine runs eng's controller loop until the test ends. It returns
// once the loop has started: its first heartbeat is recorded (Run returns
// at once when that fails, and the engine is then gone for good; a test
// that stopped PostgreSQL right after StartEngine, before the goroutine
// got there on a loaded machine, waited for heartbeats that never came).
func RunEngine(t testing.TB, eng *jobs.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = eng.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	Eventually(t, 30*time.Second, "the engine's first heartbeat", func() bool {
		select {
		case <-done:
			return true
		default:
		}
		beats, err := eng.Store.LastHeartbeats(context.Background())
		return err == nil && beats[eng.Owner()] != 0
	})
	select {
	case <-done:
		t.Fatalf("the engine stopped as it started: %v", runErr)
	default:
	}
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
