package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// active is a running attempt owned by this process.
type active struct {
	run        db.Run
	attempt    int64
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
}

var (
	errTerminated = errors.New("canceled: the backfill was canceled with terminate")
	errShutdown   = errors.New("interrupted: the server is shutting down")
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
	go func() {
		t := time.NewTicker(e.opts.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				if err := e.heartbeat(hbCtx); err != nil && hbCtx.Err() == nil {
					e.Log.Warn("heartbeat", "err", err)
				}
			}
		}
	}()
	tick := time.NewTicker(e.opts.Tick)
	defer tick.Stop()
	var lastRecover time.Time
	var comps []completion
	storeFault := false // the last step failed for a store that cannot write
	for {
		select {
		case <-ctx.Done():
			return e.shutdown(grace)
		case <-e.wake:
		case c := <-e.done:
			comps = append(comps, c)
		case <-tick.C:
		}
		comps = e.drain(comps)
		if time.Since(lastRecover) > e.opts.LeaseTTL/2 {
			lastRecover = time.Now()
			rc, err := e.recoverExpired(ctx)
			if err != nil {
				e.Log.Error("recover expired attempts", "err", err)
			}
			comps = append(comps, rc...)
		}
		if err := e.step(ctx, comps, true); err != nil {
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
			e.Log.Error("controller step", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if storeFault {
			e.Log.Info("the store writes again; the engine goes on")
			storeFault = false
		}
		comps = comps[:0]
	}
}

// storeFaultRetry is how often the controller retries a step the store
// refused to write.
const storeFaultRetry = time.Second

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

func (e *Engine) heartbeat(ctx context.Context) error {
	return e.Store.Heartbeat(ctx, e.owner, db.Millis(e.Now()))
}

func (e *Engine) shutdown(grace time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(grace)
	var comps []completion
	for e.activeCount() > 0 && time.Now().Before(deadline) {
		select {
		case c := <-e.done:
			comps = append(e.drain(comps), c)
			if err := e.step(ctx, comps, false); err != nil {
				e.Log.Error("controller step", "err", err)
			}
			comps = comps[:0]
		case <-time.After(50 * time.Millisecond):
		}
	}
	e.mu.Lock()
	for _, a := range e.running {
		// Asynchronous attempts too: nobody will call back into this
		// process, so their watcher records them interrupted.
		a.cancel(errShutdown)
	}
	e.mu.Unlock()
	stop := time.Now().Add(10 * time.Second)
	for e.activeCount() > 0 && time.Now().Before(stop) {
		select {
		case c := <-e.done:
			comps = append(e.drain(comps), c)
			if err := e.step(ctx, comps, false); err != nil {
				e.Log.Error("controller step", "err", err)
			}
			comps = comps[:0]
		case <-time.After(50 * time.Millisecond):
		}
	}
	err := e.Store.RemoveWorker(ctx, e.owner)
	if e.activeCount() > 0 {
		// Left for the next start to interrupt (its lease expires).
		e.Log.Warn("attempts still running at shutdown", "n", e.activeCount())
	}
	return err
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
		e.killOrphans(run.ID, at.Attempt) // what its command left running would build beside the retry
		a := &active{run: run, attempt: at.Attempt, parts: parts, asset: assetOf(ws, run.Asset), started: db.FromMillis(at.StartedAt)}
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
		out = append(out, completion{act: a, res: res})
		e.Log.Info("interrupting expired attempt", "run", run.ID, "attempt", at.Attempt, "owner", at.Owner, "checkpointed", len(res.Parts))
	}
	return out, nil
}

// step is one reconcile: record completions, move backfills through their
// states, plan and start runs where slots are free — one transaction.
func (e *Engine) step(ctx context.Context, comps []completion, plan bool) error {
	// Statements run without a cancelable context: go-sqlite3 would start a
	// watcher goroutine per statement, and a step is short anyway.
	ctx = context.WithoutCancel(ctx)
	now := e.Now()
	nowMs := db.Millis(now)
	ws, ids := e.workspace()
	var launch []*active
	var terminate []string
	touched := map[string]bool{}
	finished := map[string]bool{}
	var ended []db.AttemptEnd
	err := e.Store.Tx(ctx, func(tx *db.Tx) error {
		launch, terminate, ended = nil, nil, nil
		bfs, err := db.ActiveBackfills(ctx, tx)
		if err != nil {
			return err
		}
		bfState := map[string]string{}
		for _, b := range bfs {
			bfState[b.ID] = b.State
		}
		if len(comps) > 0 {
			var ends []db.AttemptEnd
			for _, c := range comps {
				end, err := e.finish(ctx, tx, c, bfState[c.act.run.BackfillID], now)
				if err != nil {
					return err
				}
				ends = append(ends, end)
				ended = append(ended, end)
				touched[c.act.run.BackfillID] = true
				finished[c.act.run.ID] = true
			}
			// One event per backfill, so that its timeline shows its runs.
			for _, grp := range groupBy(ends, func(a db.AttemptEnd) string { return a.BackfillID }) {
				if err := db.Emit(ctx, tx, db.EvAttemptsFinished, "backfill:"+grp[0].BackfillID, "controller", db.AttemptsFinished{Attempts: grp, At: nowMs}, "", now); err != nil {
					return err
				}
			}
			if bfs, err = db.ActiveBackfills(ctx, tx); err != nil {
				return err
			}
		}
		var running []*db.Backfill
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
						return err
					}
				}
				if err := db.Emit(ctx, tx, db.EvBackfillState, "backfill:"+b.ID, "controller", ev, "", now); err != nil {
					return err
				}
				touched[b.ID] = true
				b.State, b.StateVersion = to, b.StateVersion+1
			}
			if b.State == db.BackfillRunning {
				running = append(running, b)
			}
		}
		if !plan || len(running) == 0 {
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
		return err
	}
	if obs := e.opts.ObserveAttempt; obs != nil {
		for i, end := range ended {
			obs(comps[i].act.run.Asset, end.State, now.Sub(db.FromMillis(end.Started)))
		}
	}
	e.mu.Lock()
	for _, c := range comps {
		if cur, ok := e.running[c.act.run.ID]; ok && cur == c.act {
			delete(e.running, c.act.run.ID)
			e.pools.release(c.act.pool)
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
		e.pools.acquire(a.pool)
	}
	e.mu.Unlock()
	for _, a := range launch {
		go e.execute(a)
	}
	for id := range touched {
		e.broker.Publish(id)
	}
	return nil
}

// finish decides what a completed attempt means for its run.
func (e *Engine) finish(ctx context.Context, tx *db.Tx, c completion, bfState string, now time.Time) (db.AttemptEnd, error) {
	a, res := c.act, c.res
	run := a.run // kept up to date by prepareAttempt (upstream failures) or read at recovery
	state := res.State
	if state == "" {
		state = db.AttemptSucceeded
		if res.Err != nil {
			state = db.AttemptFailed
		}
	}
	errMsg := ""
	if res.Err != nil {
		errMsg = truncate(res.Err.Error(), 2000)
	}
	end := db.AttemptEnd{RunID: run.ID, BackfillID: run.BackfillID, Attempt: a.attempt, AssetID: run.AssetID, Asset: run.Asset, State: state, Error: errMsg,
		Started: db.Millis(a.started)}
	if !res.EndedAt.IsZero() {
		end.Finished = db.Millis(res.EndedAt)
	}
	if a.asset != nil {
		end.CodeVersion = a.asset.CodeVersion
	}
	restore := state == db.AttemptInterrupted || state == db.AttemptCanceled
	allOK := true
	var failedParts []db.PartRef
	for _, p := range a.parts {
		pr, reported := res.Parts[p.Key]
		switch {
		case reported && (pr.Status == db.StatusMaterialized || pr.Status == db.StatusFailed):
			p.Status, p.Metadata, p.Error = pr.Status, pr.Metadata, pr.Error
		case restore:
			p.Status = state
		case res.Err == nil && state == db.AttemptSucceeded:
			p.Status = db.StatusMaterialized
		default:
			p.Status = db.StatusFailed
			p.Error = errMsg
		}
		if p.Status != db.StatusMaterialized {
			allOK = false
		}
		if p.Status == db.StatusFailed {
			failedParts = append(failedParts, db.PartRef{Key: p.Key, Idx: p.Idx})
		}
		end.Parts = append(end.Parts, p)
	}
	if state == db.AttemptSucceeded && !allOK {
		end.State = db.AttemptFailed
		if end.Error == "" {
			end.Error = fmt.Sprintf("%d of %d partitions failed", len(failedParts), len(a.parts))
			if other := run.Partitions - int64(len(a.parts)); other > 0 {
				// A retry builds what earlier attempts left, and partitions of a
				// failed upstream are skipped: say so, or "1 of 1" reads wrong
				// beside a chunk of 3.
				end.Error = fmt.Sprintf("%d of %d %s failed in this attempt; the chunk's other %d %s built earlier or skipped",
					len(failedParts), len(a.parts), plural(int64(len(a.parts)), "partition", "partitions"), other, plural(other, "was", "were"))
			}
		}
	}
	switch {
	case allOK && run.UpstreamFailed == 0:
		end.RunState = db.RunSucceeded
	case allOK:
		end.RunState = db.RunFailed
		end.Error = fmt.Sprintf("%d %s not built: an upstream partition failed", run.UpstreamFailed, plural(run.UpstreamFailed, "partition", "partitions"))
	case state == db.AttemptCanceled || bfState == db.BackfillCanceling:
		end.RunState = db.RunCanceled
		if len(failedParts) > 0 {
			end.RunState = db.RunFailed
			end.Failures = failedParts
		}
	case state == db.AttemptInterrupted:
		end.RunState = db.RunQueued
	default:
		failures, err := db.FailedAttemptsBesides(ctx, tx, run.ID, a.attempt)
		if err != nil {
			return end, err
		}
		failures++
		if failures < run.MaxAttempts {
			end.RunState = db.RunQueued
			backoff := time.Second
			if a.asset != nil && a.asset.Retries.Backoff > 0 {
				backoff = a.asset.Retries.Backoff
			}
			d := backoff << min(failures-1, 16)
			if d > time.Hour || d <= 0 {
				d = time.Hour
			}
			if res.RetryAfter > d {
				d = res.RetryAfter
			}
			end.NotBefore = db.Millis(now.Add(d))
		} else {
			end.RunState = db.RunFailed
			end.Failures = failedParts
		}
	}
	if res.Log != "" {
		if err := db.SaveAttemptLog(ctx, tx, run.ID, a.attempt, res.Log); err != nil {
			return end, err
		}
	}
	return end, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

type bfPlan struct {
	b       *db.Backfill
	segs    []db.Segment
	running int64
	planned []db.Run
	next    int64
	blocked bool
	queued  []db.Run
	// waiting counts this backfill's runs that wait for a lease another run
	// holds: they count against its max_concurrent_runs when planning new
	// chunks, so an overlapping backfill plans chunk rows one slot at a time.
	waiting int64
	// upWaiting counts its runs planned while their upstream chunks have
	// not finished: at most max_concurrent_runs of them, beside the running
	// ones (they take no slot, so that the chunks after them run).
	upWaiting int64
}

// plan starts queued runs that are due and plans new chunks, rotating
// between backfills, within the global, pool, backfill and throttle limits.
func (e *Engine) plan(ctx context.Context, tx *db.Tx, bfs []*db.Backfill, ws *catalog.Workspace, ids map[string]int64, now time.Time, finished map[string]bool) ([]*active, error) {
	e.mu.Lock()
	runningNow := 0
	for id := range e.running {
		if !finished[id] {
			runningNow++
		}
	}
	poolUse := e.pools.snapshot()
	for id, a := range e.running {
		if finished[id] && a.pool != "" {
			poolUse[a.pool]--
		}
	}
	e.mu.Unlock()
	slots := e.opts.MaxConcurrentRuns - runningNow
	if slots <= 0 {
		return nil, nil
	}
	nowMs := db.Millis(now)
	plans := make([]*bfPlan, 0, len(bfs))
	byID := map[string]*bfPlan{}
	for _, b := range bfs {
		segs, err := db.Segments(ctx, tx, b.ID)
		if err != nil {
			return nil, err
		}
		p := &bfPlan{b: b, segs: segs, running: b.RunsRunning, next: b.NextChunk}
		plans = append(plans, p)
		byID[b.ID] = p
	}
	// Queued runs that are due (retries, runs that waited for a lease).
	queued, err := db.DueQueuedRuns(ctx, tx, nowMs)
	if err != nil {
		return nil, err
	}
	for _, r := range queued {
		if p := byID[r.BackfillID]; p != nil {
			p.queued = append(p.queued, r)
		}
	}
	// Rotation: priority tiers first, round-robin inside a tier from a
	// rotating start so that no backfill waits behind another.
	e.rr++
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].b.Priority > plans[j].b.Priority })
	claimed := map[int64]map[string]bool{}
	var launch []*active
	var starts []db.AttemptStart
	canStart := func(p *bfPlan, asset *catalog.Asset) bool {
		if slots <= 0 || p.running >= p.b.MaxConcurrentRuns {
			return false
		}
		if asset != nil && asset.Pool != "" {
			if !e.pools.admit(ws, asset.Pool, poolUse[asset.Pool], now) {
				return false
			}
		}
		return true
	}
	tryOne := func(p *bfPlan) (bool, error) {
		// A queued run first.
		for len(p.queued) > 0 {
			r := p.queued[0]
			asset := assetOf(ws, r.Asset)
			if !canStart(p, asset) {
				return false, nil
			}
			p.queued = p.queued[1:]
			if r.Seg > 0 && asset != nil && int(r.Seg) < len(p.segs) {
				up, err := e.upstreamPending(ctx, tx, ws, p.b, p.segs, p.planned, &p.segs[r.Seg], asset, r.Chunk)
				if err != nil {
					return false, err
				}
				if up.Wait {
					p.upWaiting++
					continue // its upstream chunks have not finished: try the next one
				}
			}
			a, st, ok, err := e.prepareAttempt(ctx, tx, p, r, asset, claimed, now)
			if err != nil {
				return false, err
			}
			if !ok {
				p.waiting++
				continue // still leased: try the next one
			}
			if asset != nil && asset.Pool != "" {
				poolUse[asset.Pool]++
				e.pools.take(asset.Pool)
			}
			launch, starts = append(launch, a), append(starts, st)
			slots--
			p.running++
			return true, nil
		}
		if p.blocked || p.next >= p.b.TotalChunks {
			return false, nil
		}
		seg := segmentOf(p.segs, p.next)
		if seg == nil {
			return false, fmt.Errorf("backfill %s: chunk %d has no segment", p.b.ID, p.next)
		}
		asset := assetOf(ws, seg.Asset)
		if !canStart(p, asset) || p.running+p.waiting >= p.b.MaxConcurrentRuns {
			return false, nil
		}
		var upstream upWait
		if seg.Pos > 0 && asset != nil {
			// A downstream chunk waits until every upstream chunk holding a
			// partition it reads has finished. Found through the mappings,
			// it is planned and queued, so that the chunks after it, whose
			// upstream may have finished, are not held behind it; waiting
			// for whole upstream segments, planning stops here.
			var err error
			if upstream, err = e.upstreamPending(ctx, tx, ws, p.b, p.segs, p.planned, seg, asset, p.next); err != nil {
				return false, err
			}
			if upstream.Wait && (!upstream.PerChunk || p.upWaiting >= p.b.MaxConcurrentRuns) {
				p.blocked = true
				return false, nil
			}
		}
		r, err := e.newRun(ctx, tx, p, seg, asset, now)
		if err != nil {
			return false, err
		}
		p.next++
		if r == nil {
			return true, nil // planned before: a no-op
		}
		p.planned = append(p.planned, *r)
		if upstream.Wait {
			p.upWaiting++
			return true, nil // planned, waits for its upstream chunks
		}
		a, st, ok, err := e.prepareAttempt(ctx, tx, p, *r, asset, claimed, now)
		if err != nil {
			return false, err
		}
		if !ok {
			p.waiting++
			return true, nil // planned, waits for a lease
		}
		if asset != nil && asset.Pool != "" {
			poolUse[asset.Pool]++
			e.pools.take(asset.Pool)
		}
		launch, starts = append(launch, a), append(starts, st)
		slots--
		p.running++
		return true, nil
	}
	for lo := 0; lo < len(plans) && slots > 0; {
		hi := lo
		for hi < len(plans) && plans[hi].b.Priority == plans[lo].b.Priority {
			hi++
		}
		tier := plans[lo:hi]
		off := e.rr % len(tier)
		for progress := true; progress && slots > 0; {
			progress = false
			for k := range tier {
				p := tier[(k+off)%len(tier)]
				ok, err := tryOne(p)
				if err != nil {
					return nil, err
				}
				progress = progress || ok
				if slots <= 0 {
					break
				}
			}
		}
		lo = hi
	}
	for _, p := range plans {
		if len(p.planned) == 0 && p.next == p.b.NextChunk {
			continue
		}
		ev := db.RunsPlanned{BackfillID: p.b.ID, NextChunk: p.next, Runs: p.planned, At: nowMs}
		if err := db.Emit(ctx, tx, db.EvRunsPlanned, "backfill:"+p.b.ID, "controller", ev, "", now); err != nil {
			return nil, err
		}
	}
	for _, grp := range groupBy(starts, func(a db.AttemptStart) string { return a.BackfillID }) {
		if err := db.Emit(ctx, tx, db.EvAttemptsStarted, "backfill:"+grp[0].BackfillID, "controller", db.AttemptsStarted{Owner: e.owner, Attempts: grp, At: nowMs}, "", now); err != nil {
			return nil, err
		}
	}
	return launch, nil
}

// groupBy splits items into groups of equal key, in order of first appearance.
func groupBy[T any](items []T, key func(T) string) [][]T {
	idx := map[string]int{}
	var out [][]T
	for _, it := range items {
		k := key(it)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], it)
	}
	return out
}

func segmentOf(segs []db.Segment, chunk int64) *db.Segment {
	for i := range segs {
		if chunk >= segs[i].FirstChunk && chunk < segs[i].FirstChunk+segs[i].Chunks {
			return &segs[i]
		}
	}
	return nil
}

// upWait is what a downstream chunk waits for: upstream chunks of its
// backfill still queued or running. PerChunk is true when the wait was found
// through the dependency mappings (other downstream chunks may be ready);
// false when the chunk waits for whole upstream segments.
type upWait struct {
	Wait        bool
	PerChunk    bool
	Asset       string // the upstream asset waited for
	First, Last int64  // its chunks (backfill chunk numbers) in that range
}

// upstreamPending reports whether chunk (of segment seg, asset) of backfill b
// must wait for upstream chunks of the backfill: those holding a partition
// that a partition of the chunk reads, found through the dependency
// mappings, that are still queued or running (or in planned, chunks planned
// in this round and not in the runs table yet). Where partitions cannot be
// mapped to chunks (an explicit upstream list, an upstream selected only
// transitively), the chunk waits for every upstream segment to finish.
func (e *Engine) upstreamPending(ctx context.Context, q db.Querier, ws *catalog.Workspace, b *db.Backfill, segs []db.Segment, planned []db.Run, seg *db.Segment, asset *catalog.Asset, chunk int64) (upWait, error) {
	ups := upstreamSegs(ws, asset, segs)
	if len(ups) == 0 {
		return upWait{}, nil
	}
	direct := map[string]bool{}
	for _, d := range asset.Deps {
		direct[d.Asset] = true
	}
	segAt := func(pos int64) *db.Segment {
		for i := range segs {
			if segs[i].Pos == pos {
				return &segs[i]
			}
		}
		return nil
	}
	mapped := true
	for _, pos := range ups {
		s := segAt(pos)
		mapped = mapped && s != nil && direct[s.Asset] && !s.Explicit
	}
	pendingIn := func(lo, hi int64) (bool, error) {
		for _, r := range planned {
			if r.BackfillID == b.ID && r.Chunk >= lo && r.Chunk <= hi {
				return true, nil
			}
		}
		return db.UnfinishedRunsIn(ctx, q, b.ID, lo, hi)
	}
	if !mapped {
		for _, pos := range ups {
			up := segAt(pos)
			if up == nil {
				return upWait{Wait: true}, nil
			}
			first, last := up.FirstChunk, up.FirstChunk+up.Chunks-1
			if wait, err := pendingIn(first, last); err != nil || wait {
				return upWait{Wait: wait, Asset: up.Asset, First: first, Last: last}, err
			}
		}
		return upWait{}, nil
	}
	keys, _, err := e.chunkKeys(ctx, q, b, seg, chunk)
	if err != nil {
		return upWait{}, err
	}
	downSp, err := e.space(ctx, asset.Key)
	if err != nil {
		return upWait{}, err
	}
	for _, d := range asset.Deps {
		for _, pos := range ups {
			up := segAt(pos)
			upAsset := assetOf(ws, up.Asset)
			if up.Asset != d.Asset || upAsset == nil {
				continue
			}
			upSp, err := e.space(ctx, up.Asset)
			if err != nil {
				return upWait{}, err
			}
			rs, err := e.segmentRanges(ctx, q, b.ID, up.Pos, 0, up.Partitions)
			if err != nil {
				return upWait{}, err
			}
			// The upstream chunks holding the partitions the chunk reads.
			first, last := int64(-1), int64(-1)
			for _, k := range keys {
				irs, err := catalog.UpstreamOf(d, asset.Scheme, downSp, upAsset.Scheme, upSp, k)
				if err != nil {
					continue
				}
				for _, ir := range irs {
					// rs is in index order: from the first range ending at or after ir.Lo.
					for j := sort.Search(len(rs), func(j int) bool { return rs[j].Hi >= ir.Lo }); j < len(rs) && rs[j].Lo <= ir.Hi; j++ {
						r := rs[j]
						lo, hi := max(ir.Lo, r.Lo), min(ir.Hi, r.Hi)
						c0 := up.FirstChunk + (r.Start+lo-r.Lo)/b.ChunkSize
						c1 := up.FirstChunk + (r.Start+hi-r.Lo)/b.ChunkSize
						if first < 0 || c0 < first {
							first = c0
						}
						last = max(last, c1)
					}
				}
			}
			if first < 0 {
				continue
			}
			if wait, err := pendingIn(first, last); err != nil || wait {
				return upWait{Wait: wait, PerChunk: true, Asset: up.Asset, First: first, Last: last}, err
			}
		}
	}
	return upWait{}, nil
}

// upstreamSegs returns the positions of the segments whose asset is a
// (transitive) upstream of asset.
func upstreamSegs(ws *catalog.Workspace, asset *catalog.Asset, segs []db.Segment) []int64 {
	ups := map[string]bool{}
	var walk func(a *catalog.Asset)
	walk = func(a *catalog.Asset) {
		for _, d := range a.Deps {
			if !ups[d.Asset] {
				ups[d.Asset] = true
				if u := assetOf(ws, d.Asset); u != nil {
					walk(u)
				}
			}
		}
	}
	walk(asset)
	var out []int64
	for _, s := range segs {
		if ups[s.Asset] {
			out = append(out, s.Pos)
		}
	}
	return out
}

// newRun plans chunk p.next. A run key planned before with the same
// partitions is a no-op (nil); with different partitions it is recorded as a
// conflict and not run again.
func (e *Engine) newRun(ctx context.Context, tx *db.Tx, p *bfPlan, seg *db.Segment, asset *catalog.Asset, now time.Time) (*db.Run, error) {
	chunk := p.next
	keys, _, err := e.chunkKeys(ctx, tx, p.b, seg, chunk)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(seg.Asset))
	for _, k := range keys {
		h.Write([]byte{0})
		h.Write([]byte(k))
	}
	fp := hex.EncodeToString(h.Sum(nil)[:12])
	key := RunKey(p.b.ID, chunk)
	id := e.RunID(key)
	if existing, err := db.RunFingerprint(ctx, tx, key); err == nil {
		if existing != fp {
			c := db.Conflict{RunKey: key, BackfillID: p.b.ID, ExistingFingerprint: existing, RequestedFingerprint: fp, At: db.Millis(now)}
			if err := db.Emit(ctx, tx, db.EvConflict, "backfill:"+p.b.ID, "controller", db.ConflictRecorded{Conflict: c}, "", now); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	maxAtt := int64(1)
	if asset != nil && asset.Retries.MaxAttempts > 0 {
		maxAtt = int64(asset.Retries.MaxAttempts)
	}
	r := &db.Run{ID: id, RunKey: key, BackfillID: p.b.ID, Chunk: chunk, Seg: seg.Pos, Asset: seg.Asset, AssetID: seg.AssetID, Fingerprint: fp,
		Partitions: int64(len(keys)), State: db.RunQueued, MaxAttempts: maxAtt, CreatedAt: db.Millis(now), UpdatedAt: db.Millis(now)}
	if len(keys) > 0 {
		r.FirstKey, r.LastKey = keys[0], keys[len(keys)-1]
	}
	return r, nil
}

// chunkKeys returns chunk i's partition keys and indexes (computed from the
// segment's ranges or explicit keys, never from the whole selection).
func (e *Engine) chunkKeys(ctx context.Context, tx db.Querier, b *db.Backfill, seg *db.Segment, chunk int64) ([]string, []int64, error) {
	return e.chunkKeysUpTo(ctx, tx, b, seg, chunk, b.ChunkSize)
}

// chunkKeysUpTo is chunkKeys for the first limit partitions of the chunk.
func (e *Engine) chunkKeysUpTo(ctx context.Context, tx db.Querier, b *db.Backfill, seg *db.Segment, chunk, limit int64) ([]string, []int64, error) {
	p0 := (chunk - seg.FirstChunk) * b.ChunkSize
	p1 := min(p0+b.ChunkSize, seg.Partitions, p0+limit)
	sp, err := e.space(ctx, seg.Asset)
	if err != nil {
		return nil, nil, err
	}
	if seg.Explicit {
		keys, err := db.BackfillKeys(ctx, tx, b.ID, p0, p1)
		if err != nil {
			return nil, nil, err
		}
		idx := make([]int64, len(keys))
		for i, k := range keys {
			if idx[i], err = sp.Index(k); err != nil {
				idx[i] = -1
			}
		}
		return keys, idx, nil
	}
	rs, err := e.segmentRanges(ctx, tx, b.ID, seg.Pos, p0, p1)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, p1-p0)
	idx := make([]int64, 0, p1-p0)
	for _, r := range rs {
		from := max(p0, r.Start)
		to := min(p1, r.Start+r.Hi-r.Lo+1)
		if from >= to {
			continue
		}
		lo := r.Lo + from - r.Start
		ks := sp.Keys(lo, to-from)
		for j, k := range ks {
			keys = append(keys, k)
			idx = append(idx, lo+int64(j))
		}
	}
	return keys, idx, nil
}

// segmentRanges returns the ranges of a segment overlapping selection
// positions [p0, p1). A segment's ranges never change: they are read once.
func (e *Engine) segmentRanges(ctx context.Context, q db.Querier, backfillID string, pos, p0, p1 int64) ([]db.SelRange, error) {
	key := fmt.Sprintf("%s/%d", backfillID, pos)
	e.spaceMu.Lock()
	all, ok := e.ranges[key]
	e.spaceMu.Unlock()
	if !ok {
		var err error
		if all, err = db.AllSegmentRanges(ctx, q, backfillID, pos); err != nil {
			return nil, err
		}
		e.spaceMu.Lock()
		if e.ranges == nil || len(e.ranges) > 1000 {
			e.ranges = map[string][]db.SelRange{}
		}
		e.ranges[key] = all
		e.spaceMu.Unlock()
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].Start > p0 }) - 1
	i = max(i, 0)
	var out []db.SelRange
	for ; i < len(all) && all[i].Start < p1; i++ {
		out = append(out, all[i])
	}
	return out, nil
}

// space returns an asset's current partition space (cached briefly, and
// until the workspace is reloaded).
func (e *Engine) space(ctx context.Context, asset string) (catalog.Space, error) {
	e.spaceMu.Lock()
	defer e.spaceMu.Unlock()
	ws, _ := e.workspace()
	if e.spaces == nil || e.spacesWS != ws || time.Since(e.spacesAt) > 2*time.Second {
		dyn, err := e.Store.LoadDynamicKeys(ctx)
		if err != nil {
			return nil, err
		}
		now := e.Now()
		e.spaces = map[string]catalog.Space{}
		for _, a := range ws.Assets {
			e.spaces[a.Key] = a.Scheme.Space(now, dyn)
		}
		e.spacesAt, e.spacesWS = time.Now(), ws
	}
	sp, ok := e.spaces[asset]
	if !ok {
		return nil, fmt.Errorf("asset %s is no longer declared", asset)
	}
	return sp, nil
}

// prepareAttempt builds the next attempt of run r: the chunk's partitions
// minus those this run already materialized (checkpoint), minus those whose
// upstream failed in this backfill. ok is false when another run holds the
// lease on one of the partitions: the run then waits.
func (e *Engine) prepareAttempt(ctx context.Context, tx *db.Tx, p *bfPlan, r db.Run, asset *catalog.Asset, claimed map[int64]map[string]bool, now time.Time) (*active, db.AttemptStart, bool, error) {
	seg := &p.segs[r.Seg]
	keys, idx, err := e.chunkKeys(ctx, tx, p.b, seg, r.Chunk)
	if err != nil {
		return nil, db.AttemptStart{}, false, err
	}
	var cp db.RunCheckpoint
	if r.Attempts > 0 {
		since := int64(math.MaxInt64)
		if r.StartedAt != nil {
			since = *r.StartedAt
		}
		if cp, err = db.RunCheckpointOf(ctx, tx, r.AssetID, r.ID, since, keys); err != nil {
			return nil, db.AttemptStart{}, false, err
		}
	}
	done := cp.Done
	var lo, hi int64 = -1, -1
	for _, i := range idx {
		if i >= 0 && (lo < 0 || i < lo) {
			lo = i
		}
		hi = max(hi, i)
	}
	statuses := map[string]string{}
	if lo >= 0 {
		if statuses, err = db.StatusRows(ctx, tx, r.AssetID, lo, hi); err != nil {
			return nil, db.AttemptStart{}, false, err
		}
	}
	cl := claimed[r.AssetID]
	if cl == nil {
		cl = map[string]bool{}
		claimed[r.AssetID] = cl
	}
	for _, k := range keys {
		if done[k] {
			continue
		}
		if statuses[k] == db.StatusInProgress || cl[k] {
			return nil, db.AttemptStart{}, false, nil
		}
	}
	attempt := r.Attempts + 1
	st := db.AttemptStart{RunID: r.ID, BackfillID: r.BackfillID, Attempt: attempt, AssetID: r.AssetID, Asset: r.Asset}
	if asset != nil {
		st.CodeVersion = asset.CodeVersion
	}
	ws, ids := e.workspace()
	a := &active{run: r, attempt: attempt, asset: asset, started: now}
	if asset != nil {
		a.pool = asset.Pool
	}
	for j, k := range keys {
		if done[k] {
			continue
		}
		if asset != nil && r.Seg > 0 {
			failed, err := e.upstreamFailed(ctx, tx, ws, ids, p, asset, k)
			if err != nil {
				return nil, db.AttemptStart{}, false, err
			}
			if failed {
				st.UpstreamFailed = append(st.UpstreamFailed, db.PartRef{Key: k, Idx: idx[j]})
				continue
			}
		}
		cl[k] = true
		// The instance id is derived from the attempt when applied (st.Asset).
		pr := db.PartRef{Key: k, Idx: idx[j], Prev: statuses[k], Again: cp.Built[k]}
		st.Parts = append(st.Parts, pr)
	}
	db.DeriveInstanceIDs(st.Parts, r.ID, attempt, r.Asset)
	a.parts = st.Parts
	a.upFailed = len(st.UpstreamFailed)
	a.run.UpstreamFailed += int64(a.upFailed)
	if len(st.Parts) > 0 {
		a.rangeStart, a.rangeEnd = st.Parts[0].Key, st.Parts[len(st.Parts)-1].Key
	}
	return a, st, true, nil
}

// inProgressParts recomputes an attempt's partitions from its chunk and
// returns those whose instance is still in progress, with the status each
// had before (the row's last attempt status; none: it had no row).
func (e *Engine) inProgressParts(ctx context.Context, run db.Run, attempt int64) ([]db.PartRef, error) {
	b, err := e.Store.Backfill(ctx, run.BackfillID)
	if err != nil {
		return nil, err
	}
	segs, err := db.Segments(ctx, e.Store.Reader(), run.BackfillID)
	if err != nil || int(run.Seg) >= len(segs) {
		return nil, fmt.Errorf("segments of %s: %v", run.BackfillID, err)
	}
	keys, idx, err := e.chunkKeys(ctx, e.Store.Reader(), &b, &segs[run.Seg], run.Chunk)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(keys))
	instanceID := db.AttemptInstanceIDs(run.ID, attempt, run.Asset)
	for i, k := range keys {
		ids[i] = instanceID(k)
	}
	live, err := db.InProgressInstances(ctx, e.Store.Reader(), run.AssetID, keys, ids)
	if err != nil {
		return nil, err
	}
	var built map[string]bool
	if attempt > 1 {
		cp, err := db.RunCheckpointOf(ctx, e.Store.Reader(), run.AssetID, run.ID, math.MaxInt64, keys)
		if err != nil {
			return nil, err
		}
		built = cp.Built
	}
	var out []db.PartRef
	for i, k := range keys {
		if !live[ids[i]] {
			continue
		}
		prev, err := e.Store.LastAttemptStatus(ctx, run.AssetID, k)
		if err != nil {
			return nil, err
		}
		p := db.PartRef{Key: k, Idx: idx[i], Prev: prev, Again: built[k]} // id derived when applied (AttemptEnd.Asset)
		out = append(out, p)
	}
	return out, nil
}

// upstreamFailed reports whether an upstream partition that key reads failed
// (or was skipped) in this backfill.
func (e *Engine) upstreamFailed(ctx context.Context, tx *db.Tx, ws *catalog.Workspace, ids map[string]int64, p *bfPlan, asset *catalog.Asset, key string) (bool, error) {
	downSp, err := e.space(ctx, asset.Key)
	if err != nil {
		return false, err
	}
	for _, d := range asset.Deps {
		inBackfill := false
		for _, s := range p.segs {
			inBackfill = inBackfill || s.Asset == d.Asset
		}
		up := assetOf(ws, d.Asset)
		if !inBackfill || up == nil {
			continue
		}
		upSp, err := e.space(ctx, up.Key)
		if err != nil {
			return false, err
		}
		rs, err := catalog.UpstreamOf(d, asset.Scheme, downSp, up.Scheme, upSp, key)
		if err != nil {
			continue
		}
		for _, r := range rs {
			f, err := db.UpstreamFailedIn(ctx, tx, p.b.ID, ids[up.Key], r.Lo, r.Hi)
			if err != nil || f {
				return f, err
			}
		}
	}
	return false, nil
}

// queuedRunFailures lists, for each run of backfill b that waits for a retry
// (queued after a failed attempt), the partitions its last attempt failed:
// once the backfill is canceled those runs never retry, and the partitions
// count as failed (retry-failed then takes them).
func (e *Engine) queuedRunFailures(ctx context.Context, tx *db.Tx, b *db.Backfill) ([]db.RunFailures, error) {
	runs, err := db.RunsAwaitingRetry(ctx, tx, b.ID)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, nil
	}
	segs, err := db.Segments(ctx, tx, b.ID)
	if err != nil {
		return nil, err
	}
	var out []db.RunFailures
	for _, r := range runs {
		if int(r.Seg) >= len(segs) {
			return nil, fmt.Errorf("run %s: segment %d of backfill %s is missing", r.ID, r.Seg, b.ID)
		}
		keys, idx, err := e.chunkKeys(ctx, tx, b, &segs[r.Seg], r.Chunk)
		if err != nil {
			return nil, err
		}
		failed, err := db.FailedByRun(ctx, tx, r.AssetID, r.ID, keys)
		if err != nil {
			return nil, err
		}
		rf := db.RunFailures{RunID: r.ID, AssetID: r.AssetID}
		for i, k := range keys {
			if failed[k] {
				rf.Parts = append(rf.Parts, db.PartRef{Key: k, Idx: idx[i]})
			}
		}
		if len(rf.Parts) > 0 {
			out = append(out, rf)
		}
	}
	return out, nil
}

// plural picks the word for n.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
