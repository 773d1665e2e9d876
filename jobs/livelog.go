package jobs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// liveLogs holds the output buffers of the command attempts running in this
// process, by run id, so that the run page can tail a log before the attempt
// ends and its log is stored.
var liveLogs sync.Map // run id → *tailBuffer

// trackLiveLog registers b as the live output of w's attempt; call the
// result when the attempt ends. On a store shared by several instances
// the engine also keeps it in the store for the others (liveTails).
func trackLiveLog(w Work, b *tailBuffer) func() {
	liveLogs.Store(w.RunID, b)
	var done func()
	if w.tails != nil {
		done = w.tails.add(w.RunID, w.Attempt, b)
	}
	return func() {
		liveLogs.CompareAndDelete(w.RunID, b)
		if done != nil {
			done()
		}
	}
}

// LiveLog returns the output so far of run's attempt in progress (its last
// LogLimit bytes), and whether one is in progress: on this server, or on
// another instance of a shared store (which keeps it there each second).
func (e *Engine) LiveLog(runID string) (string, bool) {
	if v, ok := liveLogs.Load(runID); ok {
		return v.(*tailBuffer).String(), true
	}
	if e.Store.Dialect() != db.Postgres {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, ok, err := e.Store.LiveLog(ctx, runID)
	if err != nil {
		return "", false
	}
	return l, ok
}

// liveTailEvery is how often, at most, a running attempt's output is
// written to the store for the other instances.
var liveTailEvery = time.Second

// liveTails are the outputs of an engine's running command attempts that
// it keeps in the store (PostgreSQL: live_logs) for the other instances,
// each at most once a liveTailEvery while it changes, and removes once
// the attempt ended.
type liveTails struct {
	on   atomic.Bool // keepLiveTails runs
	mu   sync.Mutex
	runs map[string]*liveTail
}

type liveTail struct {
	attempt int64
	buf     *tailBuffer
	written int  // the buffer's total when last written
	ended   bool // the attempt ended: remove its row
}

func newLiveTails() *liveTails { return &liveTails{runs: map[string]*liveTail{}} }

func (l *liveTails) add(run string, attempt int64, b *tailBuffer) (done func()) {
	if !l.on.Load() {
		return nil
	}
	t := &liveTail{attempt: attempt, buf: b}
	l.mu.Lock()
	l.runs[run] = t
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		t.ended = true
		l.mu.Unlock()
	}
}

// keep writes the outputs that changed, removes the rows of the attempts
// that ended, each liveTailEvery until ctx ends.
func (e *Engine) keepLiveTails(ctx context.Context) {
	e.tails.on.Store(true)
	defer e.tails.on.Store(false)
	every(ctx, liveTailEvery, func() { e.flushLiveTails(ctx) })
}

func (e *Engine) flushLiveTails(ctx context.Context) {
	type item struct {
		run  string
		t    *liveTail
		gone bool
	}
	var items []item
	e.tails.mu.Lock()
	for run, t := range e.tails.runs {
		switch {
		case t.ended:
			items = append(items, item{run, t, true})
			delete(e.tails.runs, run)
		case t.buf.Total() != t.written:
			items = append(items, item{run, t, false})
		}
	}
	e.tails.mu.Unlock()
	now := db.Millis(e.Now())
	for _, it := range items {
		if it.gone {
			// Its log is stored by now, which removed the row (or soon:
			// the step that stores it removes it too).
			if err := e.Store.DropLiveLog(ctx, it.run, it.t.attempt); err != nil && ctx.Err() == nil {
				e.Log.Debug("live log not removed", "run", it.run, "err", err)
			}
			continue
		}
		total := it.t.buf.Total()
		if err := e.Store.KeepLiveLog(ctx, it.run, it.t.attempt, e.owner, it.t.buf.String(), now); err != nil {
			if ctx.Err() == nil {
				e.Log.Debug("live log not kept for the other instances", "run", it.run, "err", err)
			}
			continue
		}
		e.tails.mu.Lock()
		it.t.written = total
		e.tails.mu.Unlock()
	}
}
