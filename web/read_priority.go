package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
)

// DefaultReadNice is how much lower than the rest of the process the page
// and API reads run by default (tessera serve --read-nice): a nice value,
// added to the process's own.
//
// Why: a read slot (read_slots.go) bounds how many reads compute at once,
// but each one still competes with the backfill engine for the machine as
// an equal. On 2 cores, 16 readers reading as fast as they were answered
// kept their one slot busy, and a backfill of 200,000 partitions ran at
// 0.64–0.75 of its speed alone (tessera bench mixed --rounds 5, ten runs);
// with the reads at nice 10 on threads of their own (and sent after their
// slot), at 0.74–0.79 in the same sittings, alternating (six runs), every
// page's p99 still under 200 ms; with --read-nice 0, 0.70–0.73. When the
// engine is idle the reads get every core, as before: a lower priority
// only matters while both want the same core.
const DefaultReadNice = 10

// MaxReadNice is the largest nice increment (Linux's lowest priority is 19).
const MaxReadNice = 19

// startProcs is GOMAXPROCS before any read worker raised it: the cores
// the process may use, from which the read slots are counted.
var startProcs = runtime.GOMAXPROCS(0)

// readPool runs reads on goroutines each locked to an OS thread whose
// priority is lowered by nice. Each worker holds a P (a GOMAXPROCS slot)
// while it computes, but at a low priority the kernel may keep it off its
// core while the engine needs it: each worker started raises GOMAXPROCS by
// one, so that a read the kernel holds back never holds back the engine's
// goroutines with it. Workers live as long as the process; servers of one
// process at one nice value share its pool (it grows to the most slots
// any asked for), which a server's own slots still bound.
type readPool struct {
	nice    int
	work    chan readJob
	workers int
}

type readJob struct {
	fn   func() error
	done chan readOutcome
}

// readOutcome is what a read returned, or the panic it raised.
type readOutcome struct {
	err      error
	panicked bool
	val      any
	stack    []byte
}

var (
	poolsMu sync.Mutex
	pools   = map[int]*readPool{}
)

// readPoolFor returns the pool of reads at nice with at least size
// workers, starting those missing; an error if this system cannot lower a
// thread's priority (then no pool: reads run where they arrive).
func readPoolFor(nice, size int) (*readPool, error) {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p := pools[nice]
	if p == nil {
		p = &readPool{nice: nice, work: make(chan readJob)}
	}
	for p.workers < size {
		if err := p.start(); err != nil {
			return nil, err
		}
	}
	pools[nice] = p
	return p, nil
}

// start starts one worker and waits until its thread's priority is set.
func (p *readPool) start() error {
	ready := make(chan error, 1)
	go p.work1(ready)
	if err := <-ready; err != nil {
		return err
	}
	p.workers++
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	return nil
}

// work1 is one worker: it locks its goroutine to a thread, lowers the
// thread's priority, says so on ready, and runs reads until the process
// ends. The thread is never unlocked: it keeps its priority, and no other
// goroutine runs on it. Never the process's main thread, whose nice value
// is what ps and top show for the whole server: a worker started there
// (the goroutine that starts a pool often gives its thread to the worker
// while it waits) holds it until another worker, which then cannot be
// given it, has a thread of its own, and lets it go.
func (p *readPool) work1(ready chan<- error) {
	runtime.LockOSThread()
	if onMainThread() {
		again := make(chan error, 1)
		go p.work1(again)
		ready <- <-again
		runtime.UnlockOSThread()
		return
	}
	if err := lowerThreadPriority(p.nice); err != nil {
		ready <- err
		return // the thread exits with its goroutine
	}
	ready <- nil
	for job := range p.work {
		p.serve(job)
	}
}

// serve runs one read. A read that ends its goroutine (runtime.Goexit, as
// t.FailNow does in a test's handler) ends this worker with it: its
// request is answered as a panic would be, and another worker takes this
// one's place, so that neither the request nor the pool waits forever.
func (p *readPool) serve(job readJob) {
	returned := false
	defer func() {
		if !returned {
			job.done <- readOutcome{panicked: true, val: errors.New("the read ended its goroutine (runtime.Goexit)"), stack: debug.Stack()}
			go p.work1(make(chan error, 1))
		}
	}()
	job.done <- runRead(job.fn)
	returned = true
}

// runRead calls fn, turning a panic into an outcome for the request's own
// goroutine to raise again (where echo's Recover middleware answers 500).
func runRead(fn func() error) (out readOutcome) {
	defer func() {
		if r := recover(); r != nil {
			out = readOutcome{panicked: true, val: r, stack: debug.Stack()}
		}
	}()
	return readOutcome{err: fn()}
}

// run runs fn on a worker and returns what it returned or raised; the
// caller raises a panic again with outcome.result, on its own goroutine.
// ok is false when ctx ended before a worker took fn (fn never ran).
func (p *readPool) run(ctx context.Context, fn func() error) (out readOutcome, ok bool) {
	job := readJob{fn: fn, done: make(chan readOutcome, 1)}
	select {
	case p.work <- job:
	case <-ctx.Done():
		return out, false
	}
	return <-job.done, true
}

// result is the read's error, or its panic raised again here, with the
// stack where it happened.
func (out readOutcome) result() error {
	if out.panicked {
		if out.val == http.ErrAbortHandler {
			panic(out.val) // net/http's signal to abort the response quietly
		}
		panic(&readPanic{val: out.val, stack: out.stack})
	}
	return out.err
}

// readPanic is a panic raised by a read on a worker, raised again on the
// request's goroutine: its message carries the worker's stack, where the
// panic happened.
type readPanic struct {
	val   any
	stack []byte
}

func (e *readPanic) Error() string { return fmt.Sprintf("%v (raised in a read)\n%s", e.val, e.stack) }

// Unwrap is the panic's value when it was an error.
func (e *readPanic) Unwrap() error {
	if err, ok := e.val.(error); ok {
		return err
	}
	return nil
}
