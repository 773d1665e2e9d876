package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// active is a running attempt owned by this process.
type active struct {
	run        db.Run
	attempt    int64
	owner      string // the instance that started it (e.owner, or a dead one's at recovery)
	parts      []db.PartRef
	upFailed   int
	pool       string
	asset      *catalog.Asset
	rangeStart string
	rangeEnd   string
	started    time.Time
	ctx        context.Context
	cancel     context.CancelCauseFunc
	async      bool          // waiting for the remote engine's callback
	callback   chan struct{} // closed by Complete when it claims the attempt
}

type completion struct {
	act *active
	res Result
	// orphans: another instance's expired attempt (recoverExpired), whose
	// command's processes are killed once its end is committed here.
	orphans bool
}

var (
	errTerminated = errors.New("canceled: the backfill was canceled with terminate")
	errShutdown   = errors.New("interrupted: the server is shutting down")
	errLost       = errors.New("interrupted: another server recorded this attempt (this server's lease expired)")
	errFenced     = errors.New("interrupted: this server could not heartbeat for its lease TTL, so another server may take the attempt over; stopped here so that it is not built twice")
)

// Run runs the controller loop until ctx ends, then stops planning, gives
// active attempts grace to finish and records the rest as interrupted.
func (e *Engine) Run(ctx context.Context, grace time.Duration) error {
	hbCtx, stopHB := context.WithCancel(context.Background())
	defer stopHB()
	// WAL checkpoints run beside the controller, not inside its commits.
	stopCkpt, err := e.Store.StartCheckpointer(100 * time.Millisecond)
	if err != nil {
		return err
	}
	defer stopCkpt()
	if err := e.heartbeat(context.Background()); err != nil {
		return err
	}
	// Each said once a spell of failures (spell.go).
	var beat, lease spell
	const (
		beatFailed  = "heartbeat failed; said once until one succeeds (on PostgreSQL this instance starts no attempt meanwhile)"
		leaseFailed = "ask for the schedules' lease: failed; said once until it is asked again"
		leaseAgain  = "the schedules' lease is asked for again"
	)
	lease.note(context.Background(), e.Log, e.lead(context.Background()), leaseFailed, leaseAgain)
	hbDone := make(chan struct{})
	defer func() { stopHB(); <-hbDone; e.stepDown(context.Background()) }()
	go func() {
		defer close(hbDone)
		every(hbCtx, e.opts.Heartbeat, func() {
			beat.note(hbCtx, e.Log, e.heartbeat(hbCtx), beatFailed, "heartbeat recorded again")
			lease.note(hbCtx, e.Log, e.lead(hbCtx), leaseFailed, leaseAgain)
		})
	}()
	tick := time.NewTicker(e.opts.Tick)
	defer tick.Stop()
	var lastRecover time.Time
	var comps []completion
	storeFault := false // the last step failed for a store that cannot write or does not answer
	storeDown := false  // … that did not answer
	// unreachable says whether err is the store not answering, warning
	// once an outage.
	unreachable := func(err error) bool {
		if !db.IsUnavailable(err) {
			return false
		}
		if !storeFault {
			e.Log.Warn("the store does not answer (PostgreSQL unreachable); the engine retries until it does", "err", oneLine(err))
		}
		storeFault, storeDown = true, true
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return e.shutdown(grace, func() { stopHB(); <-hbDone })
		case <-e.wake:
		case c := <-e.done:
			comps = e.gather(append(comps, c), stepCoalesce)
		case <-tick.C:
		}
		comps = e.drain(comps)
		if time.Since(lastRecover) > e.opts.LeaseTTL/2 {
			lastRecover = time.Now()
			e.fenceIfExpired()
			if e.mayJudgeOthers() {
				rc, err := e.recoverExpired(ctx)
				if err != nil && !unreachable(err) {
					e.Log.Error("recover expired attempts", "err", oneLine(err))
				}
				comps = append(comps, rc...)
			}
			if err := e.cancelLost(ctx); err != nil && !unreachable(err) {
				e.Log.Error("check this instance's attempts", "err", oneLine(err))
			}
		}
		e.beatIfStale(ctx) // lease_health.go
		var err error
		comps, err = e.step(ctx, comps, e.mayPlan()) // mayPlan: workspace_check.go; beatFresh: step
		e.steps.Add(1)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			var we *db.WriteError
			if errors.As(err, &we) {
				// The store cannot write (full disk, lock, …): say so once
				// a spell and retry each second, not each tick; the
				// completions are kept for the step that can write.
				if !storeFault {
					e.Log.Warn("the store cannot write; the engine retries until it can", "cause", we.Cause, "since", we.Since, "err", err)
				}
				storeFault = true
				select {
				case <-ctx.Done():
				case <-time.After(storeFaultRetry):
				}
				continue
			}
			if unreachable(err) {
				// PostgreSQL is down or unreachable: retried each second.
				select {
				case <-ctx.Done():
				case <-time.After(storeFaultRetry):
				}
				continue
			}
			e.Log.Error("controller step", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if storeFault {
			if storeDown {
				e.Log.Info("the store answers again; the engine goes on")
			} else {
				e.Log.Info("the store writes again; the engine goes on")
			}
			storeFault, storeDown = false, false
		}
		comps = comps[:0]
	}
}

// Steps is how many controller steps the engine has taken (each one write
// transaction), for the benchmarks.
func (e *Engine) Steps() int64 { return e.steps.Load() }

// storeFaultRetry is how often the controller retries a step the store
// refused to write.
const storeFaultRetry = time.Second

// stepCoalesce is how long a step that a completion woke waits for the
// other running attempts' completions (group commit): a step's transaction
// costs about the same for one attempt as for eight (its commit writes the
// pages it touched, many of them shared), so attempts that end within a
// millisecond of each other are finished in one step, not one step each.
const stepCoalesce = time.Millisecond

// gather adds to comps the completions that arrive within window, until
// every running attempt has completed.
func (e *Engine) gather(comps []completion, window time.Duration) []completion {
	comps = e.drain(comps)
	if len(comps) >= e.activeCount() {
		return comps
	}
	t := time.NewTimer(window)
	defer t.Stop()
	for len(comps) < e.activeCount() {
		select {
		case c := <-e.done:
			comps = append(comps, c)
		case <-t.C:
			return comps
		}
	}
	return comps
}

func (e *Engine) drain(comps []completion) []completion {
	for {
		select {
		case c := <-e.done:
			comps = append(comps, c)
		default:
			return comps
		}
	}
}

// fenceIfExpired stops this instance's attempts once it has not
// heartbeated for the lease TTL, on PostgreSQL (where other instances may
// share the database): to them its leases have expired and they take the
// attempts over, so it stops building them itself. Their completions are
// recorded interrupted if nobody did, or dropped (finishCompleted). On
// SQLite the one server keeps its attempts through a store that cannot
// write.
func (e *Engine) fenceIfExpired() {
	last := e.lastBeat.Load()
	if e.Store.Dialect() != db.Postgres || last == 0 || time.Since(time.Unix(0, last)) <= e.opts.LeaseTTL {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.running {
		if a.cancel != nil && a.ctx.Err() == nil {
			e.Log.Warn("no heartbeat for the lease TTL: stopping the attempt, which another server may take over", "run", a.run.ID, "attempt", a.attempt)
			a.cancel(errFenced)
		}
	}
}

// shutdown records the attempts that end within grace, cancels the others,
// and removes this instance's worker row once stopBeats has stopped its
// heartbeats (a heartbeat after the removal wrote the row back, and the
// store looked in use by a stopped instance).
func (e *Engine) shutdown(grace time.Duration, stopBeats func()) error {
	ctx := context.Background()
	comps := e.recordEnding(ctx, time.Now().Add(grace), nil)
	e.mu.Lock()
	for _, a := range e.running {
		// Asynchronous attempts too: nobody will call back into this
		// process, so their watcher records them interrupted.
		a.cancel(errShutdown)
	}
	e.mu.Unlock()
	e.recordEnding(ctx, time.Now().Add(10*time.Second), comps)
	stopBeats()
	err := e.Store.RemoveWorker(ctx, e.owner)
	if e.activeCount() > 0 {
		// Left for the next start to interrupt (its lease expires).
		e.Log.Warn("attempts still running at shutdown", "n", e.activeCount())
	}
	return err
}

// recordEnding records the attempts that end until none is running or
// deadline passes; comps is the buffer of their completions, returned for
// reuse.
func (e *Engine) recordEnding(ctx context.Context, deadline time.Time, comps []completion) []completion {
	for e.activeCount() > 0 && time.Now().Before(deadline) {
		select {
		case c := <-e.done:
			comps = append(e.drain(comps), c)
			var err error
			if comps, err = e.step(ctx, comps, false); err != nil {
				e.Log.Error("controller step", "err", err)
			}
			comps = comps[:0]
		case <-time.After(50 * time.Millisecond):
		}
	}
	return comps
}

func (e *Engine) activeCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// recoverExpired turns running attempts whose owner stopped heartbeating
// into interrupted completions, keeping the partitions the attempt had
// already reported (checkpoint).
func (e *Engine) recoverExpired(ctx context.Context) ([]completion, error) {
	cut := db.Millis(e.Now().Add(-e.opts.LeaseTTL))
	atts, err := e.Store.ExpiredAttempts(ctx, e.owner, cut)
	if err != nil {
		return nil, err
	}
	lastSeen := map[string]int64{} // each owner's last heartbeat
	if len(atts) > 0 {
		if lastSeen, err = e.Store.LastHeartbeats(ctx); err != nil {
			return nil, err
		}
	}
	ws, _ := e.workspace()
	var out []completion
	for _, at := range atts {
		run, err := e.Store.Run(ctx, at.RunID)
		if err != nil {
			return nil, err
		}
		parts, err := e.inProgressParts(ctx, run, at.Attempt)
		if err != nil {
			return nil, err
		}
		a := &active{run: run, attempt: at.Attempt, owner: at.Owner, parts: parts, asset: ws.Asset(run.Asset), started: db.FromMillis(at.StartedAt)}
		res := Result{State: db.AttemptInterrupted, Err: fmt.Errorf("interrupted: the server running this attempt stopped (its lease, held by %s, expired); retried, not counted against max_attempts", at.Owner)}
		res.Parts = readReport(e.reportPath(run.ID, at.Attempt))
		if out := crashLog(e.reportPath(run.ID, at.Attempt)); out != "" {
			res.Log = out + "\ntessera: the server stopped while this attempt ran; above is the output its command had written by then\n"
		}
		if seen, ok := lastSeen[at.Owner]; ok {
			// It stopped with its server, not when this server noticed: its
			// duration leaves the downtime out.
			res.EndedAt = db.FromMillis(max(seen, at.StartedAt))
		}
		out = append(out, completion{act: a, res: res, orphans: true})
		e.Log.Info("interrupting expired attempt", "run", run.ID, "attempt", at.Attempt, "owner", at.Owner, "checkpointed", len(res.Parts))
	}
	return out, nil
}

// cancelLost cancels the attempts this instance runs that the store no
// longer has running under its name: another instance found its lease
// expired (it could not heartbeat for the lease TTL) and recorded them
// interrupted, and their runs may be retried there. Their completions are
// then dropped (finishCompleted).
func (e *Engine) cancelLost(ctx context.Context) error {
	if e.activeCount() == 0 {
		return nil
	}
	live, err := db.AttemptsRunningNow(ctx, e.Store.Reader())
	if err != nil {
		return err
	}
	mine := map[attemptRef]bool{}
	for _, a := range live {
		if a.Owner == e.owner {
			mine[attemptRef{a.RunID, a.Attempt}] = true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Every attempt in e.running was committed before the read began
	// (launched after its step, removed after its end's step).
	for _, a := range e.running {
		if !mine[attemptRef{a.run.ID, a.attempt}] && a.cancel != nil {
			e.Log.Warn("attempt recorded by another server; canceling it here", "run", a.run.ID, "attempt", a.attempt)
			a.cancel(errLost)
		}
	}
	return nil
}

// maxStepDeferral bounds how long a step waits for urgent writes (backfills
// being created): under a storm of them, the controller still takes a step
// this often.
const maxStepDeferral = 200 * time.Millisecond

// step is one reconcile: record completions, move backfills through their
// states, plan and start runs where slots are free — one transaction. It
// answers the completions it took: comps and those that arrived while it
// waited for the other instances' steps (kept by the caller for the next
// step when it fails).
func (e *Engine) step(ctx context.Context, comps []completion, plan bool) ([]completion, error) {
	// Statements run without a cancelable context: go-sqlite3 would start a
	// watcher goroutine per statement, and a step is short anyway.
	ctx = context.WithoutCancel(ctx)
	var now time.Time // read once the step holds the lock (below)
	ws, ids := e.workspace()
	var launch []*active
	var terminate []string
	touched := map[string]bool{}
	finished := map[string]bool{}
	var ended []db.AttemptEnd
	// Backfills being launched (a burst of ticks, pushed events, a user's
	// create) go first; the step waits for them, at most maxStepDeferral.
	e.Store.WaitUrgent(maxStepDeferral)
	var kept []completion
	err := e.Store.Tx(ctx, func(tx *db.Tx) error {
		launch, terminate, ended, kept = nil, nil, nil, nil
		// One step at a time across the instances on the database: what
		// follows reads what every earlier step committed.
		if err := db.LockSteps(ctx, tx); err != nil {
			return err
		}
		// The step's time is read once it holds the lock: the wait for
		// urgent writes and for other instances' steps came before it, and
		// the attempts it starts carry this time (a throttle counts them
		// by it, and their commands start right after the commit).
		now = e.Now()
		// The attempts that ended meanwhile are finished in this step
		// too: with several instances, a step's wait for the others
		// gathers them (group commit).
		comps = e.drain(comps)
		bfs, err := db.ActiveBackfills(ctx, tx)
		if err != nil {
			return err
		}
		bfState := map[string]string{}
		for _, b := range bfs {
			bfState[b.ID] = b.State
		}
		if len(comps) > 0 {
			if ended, kept, err = e.finishCompleted(ctx, tx, comps, bfState, now, touched, finished); err != nil {
				return err
			}
			if bfs, err = db.ActiveBackfills(ctx, tx); err != nil {
				return err
			}
		}
		var running []*db.Backfill
		if running, terminate, err = e.advanceBackfills(ctx, tx, bfs, plan, now, touched); err != nil {
			return err
		}
		if !plan || len(running) == 0 || !e.beatFresh() {
			// beatFresh: not under a lease the others may find
			// expired before this instance renews it (lease_health.go).
			return nil
		}
		var err2 error
		launch, err2 = e.plan(ctx, tx, running, ws, ids, now, finished)
		for _, a := range launch {
			touched[a.run.BackfillID] = true
		}
		return err2
	})
	if err != nil {
		return comps, err
	}
	if obs := e.opts.ObserveAttempt; obs != nil {
		for i, end := range ended {
			obs(kept[i].act.run.Asset, end.State, now.Sub(db.FromMillis(end.Started)))
		}
	}
	for _, c := range kept {
		if c.orphans {
			// What its command left running would build beside the
			// retry. Killed only now that its end is committed: had its
			// owner recorded it first (its lease was not expired after
			// all), the step above dropped this completion and its
			// processes live on; and a process killed here ends an
			// attempt its owner can no longer record (finishCompleted).
			e.killOrphans(c.act.run.ID, c.act.attempt)
		}
	}
	e.track(comps, terminate, launch)
	e.pools.launch(launch, time.Now())
	for _, a := range launch {
		go e.execute(a)
	}
	for id := range touched {
		e.broker.Publish(id)
	}
	return comps, nil
}

// finishCompleted records the completed attempts comps (bfState holds their
// backfills' states) and emits one attempts.finished event per backfill;
// it marks their backfills touched and their runs finished. It answers the
// ends recorded and their completions, in the same order.
//
// Only an attempt still running and owned as the completion says is
// finished: another instance may have recorded it already (it recovered
// the attempt of an instance whose lease expired, or this instance's own
// while it could not heartbeat), and an attempt is recorded once.
func (e *Engine) finishCompleted(ctx context.Context, tx *db.Tx, comps []completion, bfState map[string]string, now time.Time, touched, finished map[string]bool) ([]db.AttemptEnd, []completion, error) {
	nowMs := db.Millis(now)
	runIDs := make([]string, len(comps))
	for i, c := range comps {
		runIDs[i] = c.act.run.ID
	}
	live, err := db.RunningOwners(ctx, tx, runIDs)
	if err != nil {
		return nil, nil, err
	}
	owner := make(map[attemptRef]string, len(live))
	for _, a := range live {
		owner[attemptRef{a.RunID, a.Attempt}] = a.Owner
	}
	var ends []db.AttemptEnd
	var kept []completion
	for _, c := range comps {
		ref := attemptRef{c.act.run.ID, c.act.attempt}
		if o, ok := owner[ref]; !ok || o != c.act.owner {
			e.Log.Info("attempt already recorded elsewhere; its completion here is dropped", "run", ref.run, "attempt", ref.attempt,
				"owner", c.act.owner, "running", ok, "owner now", o)
			continue
		}
		delete(owner, ref) // recorded once, also when two completions of it meet in a step
		end, err := e.finish(ctx, tx, c, bfState[c.act.run.BackfillID], now)
		if err != nil {
			return nil, nil, err
		}
		ends = append(ends, end)
		kept = append(kept, c)
		touched[c.act.run.BackfillID] = true
		finished[c.act.run.ID] = true
	}
	// One event per backfill, so that its timeline shows its runs.
	for _, grp := range db.GroupBy(ends, func(a db.AttemptEnd) string { return a.BackfillID }) {
		if err := db.Emit(ctx, tx, db.EvAttemptsFinished, "backfill:"+grp[0].BackfillID, "controller", db.AttemptsFinished{Attempts: grp, At: nowMs}, "", now); err != nil {
			return nil, nil, err
		}
	}
	return ends, kept, nil
}

// attemptRef names an attempt.
type attemptRef struct {
	run     string
	attempt int64
}

// advanceBackfills moves each active backfill to its next state when it is
// due (canceling to canceled, running to succeeded or failed, pending to
// running when planning), marking it touched. It returns the running
// backfills and the canceling ones whose runs are to be terminated.
func (e *Engine) advanceBackfills(ctx context.Context, tx *db.Tx, bfs []db.Backfill, plan bool, now time.Time, touched map[string]bool) (running []*db.Backfill, terminate []string, err error) {
	nowMs := db.Millis(now)
	for i := range bfs {
		b := &bfs[i]
		to := ""
		switch {
		case b.State == db.BackfillCanceling && b.RunsRunning == 0:
			to = db.BackfillCanceled
		case b.State == db.BackfillCanceling && b.Terminate:
			terminate = append(terminate, b.ID)
		case b.State == db.BackfillRunning && b.NextChunk >= b.TotalChunks && b.RunsActive == 0:
			to = db.BackfillSucceeded
			if b.RunsFailed > 0 || b.PartitionsFailed > 0 || b.PartitionsUpstreamFailed > 0 {
				to = db.BackfillFailed
			}
		case b.State == db.BackfillPending && plan:
			to = db.BackfillRunning
		}
		if to != "" {
			ev := db.BackfillStateChanged{ID: b.ID, From: b.State, To: to, Version: b.StateVersion + 1, At: nowMs}
			if to == db.BackfillCanceled {
				if ev.Failures, err = e.queuedRunFailures(ctx, tx, b); err != nil {
					return nil, nil, err
				}
			}
			if err := db.Emit(ctx, tx, db.EvBackfillState, "backfill:"+b.ID, "controller", ev, "", now); err != nil {
				return nil, nil, err
			}
			touched[b.ID] = true
			b.State, b.StateVersion = to, b.StateVersion+1
		}
		if b.State == db.BackfillRunning {
			running = append(running, b)
		}
	}
	return running, terminate, nil
}

// track updates the running set after a step's transaction: the completed
// attempts leave it (and give back their pool slot), the runs of the
// backfills to terminate are canceled, the launched attempts join it (and
// take theirs).
func (e *Engine) track(comps []completion, terminate []string, launch []*active) {
	e.mu.Lock()
	for _, c := range comps {
		if cur, ok := e.running[c.act.run.ID]; ok && cur == c.act {
			delete(e.running, c.act.run.ID)
		}
	}
	for _, id := range terminate {
		for _, a := range e.running {
			if a.run.BackfillID == id {
				a.cancel(errTerminated)
			}
		}
	}
	for _, a := range launch {
		a.ctx, a.cancel = context.WithCancelCause(context.Background())
		a.callback = make(chan struct{})
		e.running[a.run.ID] = a
	}
	e.mu.Unlock()
}
