package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

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
	// newKeys are the keys and indexes of chunk newChunk, the chunk newRun
	// planned last, for its first attempt (prepareAttempt): computed once.
	newChunk int64
	newKeys  []string
	newIdx   []int64
	// fingerprints are the runs already planned from the backfill's next
	// chunk on, by run key (normally none), read at its first new run of
	// the step.
	fingerprints map[string]string
}

// existingFingerprint is the fingerprint of the run already planned under
// key, if one was: planning a key again with other partitions is a
// conflict. A step plans only chunks from the backfill's next chunk on, so
// the runs there are read once a step and backfill (one statement, not one
// a chunk).
func (p *bfPlan) existingFingerprint(ctx context.Context, tx *db.Tx, key string) (string, bool, error) {
	if p.fingerprints == nil {
		var err error
		if p.fingerprints, err = db.RunFingerprintsFrom(ctx, tx, p.b.ID, p.b.NextChunk); err != nil {
			return "", false, err
		}
	}
	fp, ok := p.fingerprints[key]
	return fp, ok, nil
}

// plan starts queued runs that are due and plans new chunks, rotating
// between backfills, within the global, pool, backfill and throttle limits.
func (e *Engine) plan(ctx context.Context, tx *db.Tx, bfs []*db.Backfill, ws *catalog.Workspace, ids map[string]int64, now time.Time, finished map[string]bool) ([]*active, error) {
	slots := e.freeSlots(finished)
	if slots <= 0 {
		return nil, nil
	}
	pools, err := e.countPools(ctx, tx, ws, ids, now)
	if err != nil {
		return nil, err
	}
	nowMs := db.Millis(now)
	plans, err := e.loadPlans(ctx, tx, bfs, nowMs)
	if err != nil {
		return nil, err
	}
	// A backfill of an asset this workspace does not declare waits; the
	// others plan (backfill_undeclared.go).
	if plans = e.skipUndeclared(plans, ws); len(plans) == 0 {
		return nil, nil
	}
	// Rotation: priority tiers first, round-robin inside a tier from a
	// rotating start so that no backfill waits behind another.
	e.rr++
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].b.Priority > plans[j].b.Priority })
	r := &planRound{e: e, ctx: ctx, tx: tx, ws: ws, now: now, slots: slots, pools: pools, claimed: map[int64]map[string]bool{},
		leases: map[int64]*db.Leases{}, statuses: map[int64]*statusWindow{}}
	if err := r.rotate(plans); err != nil {
		return nil, err
	}
	if err := e.emitPlanned(ctx, tx, plans, r.starts, now); err != nil {
		return nil, err
	}
	return r.launch, nil
}

// freeSlots returns this instance's run slots left (MaxConcurrentRuns is
// a cap per instance), not counting the runs that have just finished.
func (e *Engine) freeSlots(finished map[string]bool) int {
	e.mu.Lock()
	runningNow := 0
	for id := range e.running {
		if !finished[id] {
			runningNow++
		}
	}
	e.mu.Unlock()
	return e.opts.MaxConcurrentRuns - runningNow
}

// loadPlans reads each backfill's segments and its queued runs that are due.
func (e *Engine) loadPlans(ctx context.Context, tx *db.Tx, bfs []*db.Backfill, nowMs int64) ([]*bfPlan, error) {
	plans := make([]*bfPlan, 0, len(bfs))
	byID := map[string]*bfPlan{}
	for _, b := range bfs {
		segs, err := e.segments(ctx, tx, b.ID)
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
	return plans, nil
}

// planRound is the state of one plan call: the instance's slots left, each
// pool's use on every instance, the partitions claimed so far and the attempts to launch.
type planRound struct {
	e       *Engine
	ctx     context.Context
	tx      *db.Tx
	ws      *catalog.Workspace
	now     time.Time
	slots   int
	pools   poolUse
	claimed map[int64]map[string]bool
	leases  map[int64]*db.Leases // running attempts' leases, per asset, read once a step
	// statuses are the status rows of the index range the step plans in,
	// per asset (statusWindow).
	statuses map[int64]*statusWindow
	launch   []*active
	starts   []db.AttemptStart
}

// rotate walks the priority tiers of plans (sorted by priority), each
// round-robin from the engine's rotating start, until no backfill can
// start or plan anything more or the slots are used up.
func (r *planRound) rotate(plans []*bfPlan) error {
	for lo := 0; lo < len(plans) && r.slots > 0; {
		hi := lo
		for hi < len(plans) && plans[hi].b.Priority == plans[lo].b.Priority {
			hi++
		}
		tier := plans[lo:hi]
		off := r.e.rr % len(tier)
		for progress := true; progress && r.slots > 0; {
			progress = false
			for k := range tier {
				p := tier[(k+off)%len(tier)]
				ok, err := r.tryOne(p)
				if err != nil {
					return err
				}
				progress = progress || ok
				if r.slots <= 0 {
					break
				}
			}
		}
		lo = hi
	}
	return nil
}

// canStart reports whether a run of p for asset may start now: a global
// slot, a slot of the backfill and one of the asset's pool are free.
func (r *planRound) canStart(p *bfPlan, asset *catalog.Asset) bool {
	if r.slots <= 0 || p.running >= p.b.MaxConcurrentRuns {
		return false
	}
	if asset != nil && asset.Pool != "" {
		if !r.e.pools.admit(r.ws, asset.Pool, r.pools, r.now) {
			return false
		}
	}
	return true
}

// tryOne starts one of p's queued runs or else plans p's next chunk; it
// reports whether it did either.
func (r *planRound) tryOne(p *bfPlan) (bool, error) {
	started, done, err := r.startQueued(p)
	if err != nil {
		return false, err
	}
	if done {
		return started, nil
	}
	return r.planChunk(p)
}

// startQueued starts the first of p's queued runs whose upstream chunks
// have finished and whose partitions are free. done reports that p's turn
// is over: a run started (started), or none may start now; when p's queue
// runs out it is not done, and its next chunk may be planned.
func (r *planRound) startQueued(p *bfPlan) (started, done bool, err error) {
	for len(p.queued) > 0 {
		run := p.queued[0]
		asset := r.ws.Asset(run.Asset)
		if !r.canStart(p, asset) {
			return false, true, nil
		}
		p.queued = p.queued[1:]
		if run.Seg > 0 && asset != nil && int(run.Seg) < len(p.segs) {
			up, err := r.e.upstreamPending(r.ctx, r.tx, r.ws, p.b, p.segs, p.planned, &p.segs[run.Seg], asset, run.Chunk)
			if err != nil {
				return false, true, err
			}
			if up.Wait {
				p.upWaiting++
				continue // its upstream chunks have not finished: try the next one
			}
		}
		a, st, ok, err := r.e.prepareAttempt(r.ctx, r.tx, p, run, asset, r, r.now)
		if err != nil {
			return false, true, err
		}
		if !ok {
			p.waiting++
			continue // still leased: try the next one
		}
		r.take(p, asset, a, st)
		return true, true, nil
	}
	return false, false, nil
}

// planChunk plans p's next chunk as a run and starts it unless it waits
// for its upstream chunks or for a lease; it reports whether it planned.
func (r *planRound) planChunk(p *bfPlan) (bool, error) {
	if p.blocked || p.next >= p.b.TotalChunks {
		return false, nil
	}
	seg := segmentOf(p.segs, p.next)
	if seg == nil {
		return false, fmt.Errorf("backfill %s: chunk %d has no segment", p.b.ID, p.next)
	}
	asset := r.ws.Asset(seg.Asset)
	if !r.canStart(p, asset) || p.running+p.waiting >= p.b.MaxConcurrentRuns {
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
		if upstream, err = r.e.upstreamPending(r.ctx, r.tx, r.ws, p.b, p.segs, p.planned, seg, asset, p.next); err != nil {
			return false, err
		}
		if upstream.Wait && (!upstream.PerChunk || p.upWaiting >= p.b.MaxConcurrentRuns) {
			p.blocked = true
			return false, nil
		}
	}
	run, err := r.e.newRun(r.ctx, r.tx, p, seg, asset, r.now)
	if err != nil {
		return false, err
	}
	p.next++
	if run == nil {
		return true, nil // planned before: a no-op
	}
	p.planned = append(p.planned, *run)
	if upstream.Wait {
		p.upWaiting++
		return true, nil // planned, waits for its upstream chunks
	}
	a, st, ok, err := r.e.prepareAttempt(r.ctx, r.tx, p, *run, asset, r, r.now)
	if err != nil {
		return false, err
	}
	if !ok {
		p.waiting++
		return true, nil // planned, waits for a lease
	}
	r.take(p, asset, a, st)
	return true, nil
}

// take records a started attempt: it takes a global slot, one of the
// backfill's and one of its asset's pool.
func (r *planRound) take(p *bfPlan, asset *catalog.Asset, a *active, st db.AttemptStart) {
	if asset != nil && asset.Pool != "" {
		r.pools.take(asset.Pool, r.now)
	}
	r.launch, r.starts = append(r.launch, a), append(r.starts, st)
	r.slots--
	p.running++
}

// emitPlanned records, in tx, each backfill's newly planned runs and next
// chunk, then the attempts started, grouped by backfill.
func (e *Engine) emitPlanned(ctx context.Context, tx *db.Tx, plans []*bfPlan, starts []db.AttemptStart, now time.Time) error {
	nowMs := db.Millis(now)
	var planned []db.RunsPlanned
	for _, p := range plans {
		if len(p.planned) == 0 && p.next == p.b.NextChunk {
			continue
		}
		planned = append(planned, db.RunsPlanned{BackfillID: p.b.ID, NextChunk: p.next, Runs: p.planned, At: nowMs})
	}
	var started []db.AttemptsStarted
	for _, grp := range db.GroupBy(starts, func(a db.AttemptStart) string { return a.BackfillID }) {
		started = append(started, db.AttemptsStarted{Owner: e.owner, Attempts: grp, At: nowMs})
	}
	return db.EmitPlannedAndStarted(ctx, tx, "controller", planned, started, now)
}

func segmentOf(segs []db.Segment, chunk int64) *db.Segment {
	for i := range segs {
		if chunk >= segs[i].FirstChunk && chunk < segs[i].FirstChunk+segs[i].Chunks {
			return &segs[i]
		}
	}
	return nil
}

// newRun plans chunk p.next. A run key planned before with the same
// partitions is a no-op (nil); with different partitions it is recorded as a
// conflict and not run again.
func (e *Engine) newRun(ctx context.Context, tx *db.Tx, p *bfPlan, seg *db.Segment, asset *catalog.Asset, now time.Time) (*db.Run, error) {
	chunk := p.next
	keys, idx, err := e.chunkKeys(ctx, tx, p.b, seg, chunk)
	if err != nil {
		return nil, err
	}
	p.newChunk, p.newKeys, p.newIdx = chunk, keys, idx
	h := sha256.New()
	h.Write([]byte(seg.Asset))
	for _, k := range keys {
		h.Write([]byte{0})
		h.Write([]byte(k))
	}
	fp := hex.EncodeToString(h.Sum(nil)[:12])
	key := RunKey(p.b.ID, chunk)
	id := e.RunID(p.b.ID, chunk)
	if existing, found, err := p.existingFingerprint(ctx, tx, key); err != nil {
		return nil, err
	} else if found {
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

// prepareAttempt builds the next attempt of run r: the chunk's partitions
// minus those this run already materialized (checkpoint), minus those whose
// upstream failed in this backfill. ok is false when another run holds the
// lease on one of the partitions: the run then waits.
func (e *Engine) prepareAttempt(ctx context.Context, tx *db.Tx, p *bfPlan, r db.Run, asset *catalog.Asset, round *planRound, now time.Time) (*active, db.AttemptStart, bool, error) {
	claimed, leases := round.claimed, round.leases
	seg := &p.segs[r.Seg]
	keys, idx := p.newKeys, p.newIdx
	var err error
	if keys == nil || p.newChunk != r.Chunk {
		if keys, idx, err = e.chunkKeys(ctx, tx, p.b, seg, r.Chunk); err != nil {
			return nil, db.AttemptStart{}, false, err
		}
	}
	p.newKeys, p.newIdx = nil, nil // used once: the attempt may keep them
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
	lo, hi := indexSpan(idx)
	cl := claimed[r.AssetID]
	if cl == nil {
		cl = map[string]bool{}
		claimed[r.AssetID] = cl
	}
	// A partition an attempt started in this step holds is leased: no need
	// to read the status rows (many runs queued on one partition's lease
	// are tried in every step).
	for _, k := range keys {
		if !done[k] && cl[k] {
			return nil, db.AttemptStart{}, false, nil
		}
	}
	statuses := map[string]string{}
	if lo >= 0 {
		if statuses, err = round.statusRows(p, r.AssetID, lo, hi); err != nil {
			return nil, db.AttemptStart{}, false, err
		}
	}
	// The partitions running attempts lease without a status row, their
	// leases read once a step (those this step starts are claimed).
	ls := leases[r.AssetID]
	if ls == nil {
		if ls, err = db.ReadLeases(ctx, tx, r.AssetID); err != nil {
			return nil, db.AttemptStart{}, false, err
		}
		leases[r.AssetID] = ls
	}
	leased, err := ls.Leased(keys, lo, hi)
	if err != nil {
		return nil, db.AttemptStart{}, false, err
	}
	for _, k := range keys {
		if !done[k] && (statuses[k] == db.StatusInProgress || leased[k]) {
			return nil, db.AttemptStart{}, false, nil
		}
	}
	attempt := r.Attempts + 1
	st := db.AttemptStart{RunID: r.ID, BackfillID: r.BackfillID, Attempt: attempt, AssetID: r.AssetID, Asset: r.Asset, Parts: make([]db.PartRef, 0, len(keys))}
	if asset != nil {
		st.CodeVersion = asset.CodeVersion
	}
	ws, ids := e.workspace()
	a := &active{run: r, attempt: attempt, owner: e.owner, asset: asset, started: now}
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
	if len(st.Parts) == 0 {
		st.Parts = nil // as before it was sized: "parts":null in the event
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
		cp, err := e.Store.RunCheckpoint(ctx, run.AssetID, run.ID, math.MaxInt64, keys)
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
