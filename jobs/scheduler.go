package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Scheduler turns the ticks of the workspace's schedules into backfills,
// through the engine's Create with the tick's id as the idempotency key:
// a tick is recorded (and its schedule's last tick advanced) after its
// backfill is created, so a crash between the two finds the same backfill
// again instead of launching twice, and never loses the tick.
type Scheduler struct {
	e    *Engine
	log  *slog.Logger
	wake chan struct{}
	// MissedLimit bounds the missed ticks recorded one by one after a
	// downtime (older ones are counted).
	MissedLimit int
}

// NewScheduler returns the scheduler of e's workspace.
func NewScheduler(e *Engine, log *slog.Logger) *Scheduler {
	return &Scheduler{e: e, log: log, wake: make(chan struct{}, 1), MissedLimit: 1000}
}

// Wake asks the scheduler to evaluate now (after a pause, a resume, a
// workspace reload).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// tickRequestKey is the stored idempotency key of the backfill of
// schedule name's tick at.
func tickRequestKey(name string, at time.Time) string {
	return scheduleActor(name) + "\x1f" + catalog.TickID(name, at)
}

// scheduleActor is who launches a schedule's ticks.
func scheduleActor(name string) string { return "schedule:" + name }

// Run evaluates the schedules until ctx ends: at every due tick, and at
// least every maxIdle (a workspace reload, a clock jump).
func (s *Scheduler) Run(ctx context.Context) {
	const maxIdle = 30 * time.Second
	lastPrune := time.Time{}
	for {
		// Of several instances on one database, the one holding the
		// lease evaluates (leader.go).
		if !s.e.waitLeading(ctx) {
			return
		}
		now := s.e.Now()
		if err := s.Evaluate(ctx, now); err != nil && ctx.Err() == nil {
			s.log.Error("schedules: evaluation failed; retrying", "err", err)
		}
		if lastPrune.IsZero() || now.Sub(lastPrune) >= pruneEvery {
			// Once at the start, then hourly.
			if _, err := s.Prune(ctx, now); err != nil && ctx.Err() == nil {
				s.log.Error("schedules: pruning old ticks failed; retrying in an hour", "err", err)
			}
			lastPrune = now
		}
		wait := maxIdle
		if next, ok := s.nextDue(now); ok {
			wait = min(wait, max(next.Sub(s.e.Now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// pruneEvery is how often the scheduler and the sensors prune their
// history older than the retention (and once when they start).
const pruneEvery = time.Hour

// Prune deletes the ticks evaluated longer than the retention before now,
// in batches, each schedule counting its own (queued ticks stay). The
// scheduler's bookkeeping does not read them: a schedule's last tick is
// its state's, and a tick's backfill keeps the tick id as its idempotency
// key, so that no pruned tick is ever launched again.
func (s *Scheduler) Prune(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.e.Store.PruneTicks(ctx, db.Millis(now.Add(-s.e.AutomationRetention())), db.PruneBatch)
	if n > 0 {
		s.log.Info("schedules: pruned ticks older than the retention", "ticks", n, "retention", s.e.AutomationRetention().String())
	}
	return n, err
}

// nextDue is the earliest next tick of the enabled schedules.
func (s *Scheduler) nextDue(now time.Time) (time.Time, bool) {
	ws, _ := s.e.workspace()
	var best time.Time
	for _, sc := range ws.Schedules {
		if !sc.Enabled {
			continue
		}
		if t, ok := sc.Cron.Next(now); ok && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best, !best.IsZero()
}

// Evaluate evaluates every schedule once at now: the ticks owed since its
// last one (caught up within its window, the older recorded as missed, all
// skipped while it is paused) and its queued ticks.
func (s *Scheduler) Evaluate(ctx context.Context, now time.Time) error {
	ws, _ := s.e.workspace()
	// One read of every state; a schedule is only written to when it owes
	// something (a thousand schedules cost a query, not a thousand writes).
	byName, err := s.e.Store.ScheduleStates(ctx)
	if err != nil {
		return err
	}
	var errs []error
	p := &pass{}
	// One read says which schedules have queued ticks, instead of one per
	// schedule and pass.
	if p.queued, err = s.e.Store.SchedulesWithQueuedTicks(ctx); err != nil {
		return err
	}
	// One read finds the backfills created under the first owed ticks
	// (a crash after the backfill, before its tick was recorded), instead
	// of one per schedule.
	var keys []string
	for _, sc := range ws.Schedules {
		if st, ok := byName[sc.Name]; ok && sc.Enabled {
			if first, ok := sc.Cron.Next(db.FromMillis(st.LastTickAt)); ok && !first.After(now) {
				keys = append(keys, tickRequestKey(sc.Name, first))
			}
		}
	}
	if p.created, err = s.e.Store.BackfillIDsByRequestKeys(ctx, keys); err != nil {
		return err
	}
	for _, k := range keys {
		if _, ok := p.created[k]; !ok {
			p.created[k] = "" // asked: none
		}
	}
	for _, sc := range ws.Schedules {
		st, ok := byName[sc.Name]
		if !ok {
			if st, err = s.e.Store.EnsureScheduleState(ctx, sc.Name, db.Millis(now)); err != nil {
				errs = append(errs, fmt.Errorf("schedule %s: %w", sc.Name, err))
				continue
			}
		}
		if err := s.evaluateState(ctx, sc, st, now, p); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", sc.Name, err))
		}
	}
	// The first tick of each schedule that launches, all in one
	// transaction; the ticks after it (catching up), one by one after.
	if err := s.launchBatch(ctx, p.first, now); err != nil {
		errs = append(errs, err)
	}
	for _, l := range p.rest {
		if _, err := s.tick(ctx, l.sc, l.at, l.id, false, scheduleActor(l.sc.Name), now); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", l.sc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// pass gathers the ticks one evaluation launches: the first of each
// schedule (batched) and the rest.
type pass struct {
	first, rest []launchTick
	// queued names the schedules with a queued tick (nil: not read, ask).
	queued map[string]bool
	// created holds the backfills created under the first owed tick of
	// each schedule (request key → backfill id, "" for none; a key not
	// there was not read: ask).
	created map[string]string
}

type launchTick struct {
	sc *catalog.Schedule
	at time.Time
	id string
}

// evaluate evaluates one schedule at now, reading its state.
func (s *Scheduler) evaluate(ctx context.Context, sc *catalog.Schedule, now time.Time) error {
	st, err := s.e.Store.EnsureScheduleState(ctx, sc.Name, db.Millis(now))
	if err != nil {
		return err
	}
	p := &pass{}
	if err := s.evaluateState(ctx, sc, st, now, p); err != nil {
		return err
	}
	for _, l := range append(p.first, p.rest...) {
		if _, err := s.tick(ctx, l.sc, l.at, l.id, false, scheduleActor(l.sc.Name), now); err != nil {
			return err
		}
	}
	return nil
}

// evaluateState evaluates sc, whose state is st, at now: it records the
// ticks skipped and adds those to launch to p (queued ticks launch at once).
func (s *Scheduler) evaluateState(ctx context.Context, sc *catalog.Schedule, st db.ScheduleState, now time.Time, p *pass) error {
	last := db.FromMillis(st.LastTickAt)
	if !sc.Enabled {
		if next, ok := sc.Cron.Next(last); !ok || next.After(now) {
			return nil // nothing fell since: no write
		}
		return s.e.Store.AdvanceSchedule(ctx, sc.Name, db.Millis(now))
	}
	if next, ok := sc.Cron.Next(last); (!ok || next.After(now)) && st.Paused {
		return nil
	}
	// The oldest owed tick may have launched its backfill before a crash
	// kept it from being recorded: record it as launched.
	if first, ok := sc.Cron.Next(last); ok && !first.After(now) {
		id := catalog.TickID(sc.Name, first)
		bid, asked := p.created[tickRequestKey(sc.Name, first)]
		found := bid != ""
		if !asked {
			b, err := s.e.Store.BackfillByRequestKey(ctx, tickRequestKey(sc.Name, first))
			bid, found = b.ID, err == nil
		}
		if found {
			if _, err := s.record(ctx, sc, first, id, db.TickLaunched, "", &bid, false, scheduleActor(sc.Name), now); err != nil {
				return err
			}
			last = first
		}
	}
	owed := sc.Cron.OwedTicks(last, now, sc.Catchup, s.MissedLimit)
	if st.Paused {
		listed := append(owed.Missed, owed.Launch...)
		return s.skipMany(ctx, sc, listed, owed.MissedMore, owed.MissedLast, SkipPaused, now)
	}
	if err := s.skipMany(ctx, sc, owed.Missed, owed.MissedMore, owed.MissedLast, catalog.MissedOutsideWindow, now); err != nil {
		return err
	}
	for i, at := range owed.Launch {
		l := launchTick{sc: sc, at: at, id: catalog.TickID(sc.Name, at)}
		if i == 0 {
			p.first = append(p.first, l)
		} else {
			p.rest = append(p.rest, l)
		}
	}
	if len(owed.Launch) > 0 || (p.queued != nil && !p.queued[sc.Name]) {
		return nil // queued ticks wait for the next pass; or there are none
	}
	return s.launchQueued(ctx, sc, now)
}

// batchSize bounds the backfills one transaction of launchBatch creates.
const batchSize = 250

// launchBatch evaluates ticks (one per schedule) as tick does, creating
// the backfills of those that launch and recording every tick in the
// transaction that creates its backfill.
//
// A burst (a thousand schedules firing at the same second) is pipelined:
// workers, one per core, check each tick's overlap, build its request and
// resolve it on the reader pool, while this goroutine commits the ticks
// resolved so far, up to batchSize a transaction, as soon as they are
// ready (group commit). The first backfills of a burst are created within
// milliseconds instead of after the whole burst has been resolved.
func (s *Scheduler) launchBatch(ctx context.Context, ticks []launchTick, now time.Time) error {
	if len(ticks) == 0 {
		return nil
	}
	// The controller's steps wait for the burst (at most their bound).
	endUrgent := s.e.Store.BeginUrgent()
	defer endUrgent()
	type ready struct {
		l    launchTick
		item BatchItem
		err  error // the engine refused the request when resolving it
	}
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	todo := make(chan launchTick)
	readyc := make(chan ready, batchSize)
	var wg sync.WaitGroup
	for range min(max(runtime.GOMAXPROCS(0), 1), 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range todo {
				actor := scheduleActor(l.sc.Name)
				outcome, reason, err := s.overlap(ctx, l.sc, false)
				if err != nil {
					fail(err) // evaluated again next pass
					continue
				}
				if outcome == "" {
					req, skip, terr := s.e.TickRequest(ctx, l.sc, l.at)
					switch {
					case terr != nil:
						outcome, reason = db.TickFailed, terr.Error()
					case skip != "":
						outcome, reason = db.TickSkipped, skip
					default:
						r, rerr := s.e.resolve(ctx, req)
						readyc <- ready{l: l, item: BatchItem{Req: req, IdemKey: l.id, Actor: actor, resolved: r}, err: rerr}
						continue
					}
				}
				if _, err := s.record(ctx, l.sc, l.at, l.id, outcome, reason, nil, false, actor, now); err != nil {
					fail(err)
				}
			}
		}()
	}
	go func() {
		for _, l := range ticks {
			todo <- l
		}
		close(todo)
		wg.Wait()
		close(readyc)
	}()
	for first := range readyc {
		batch := []ready{first}
	more:
		for len(batch) < batchSize {
			select {
			case r, ok := <-readyc:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		var items []BatchItem
		var owners []launchTick
		for _, r := range batch {
			if r.err != nil {
				if _, err := s.refused(ctx, r.l, r.err, now); err != nil {
					fail(err)
				}
				continue
			}
			items, owners = append(items, r.item), append(owners, r.l)
		}
		if len(items) == 0 {
			continue
		}
		refused, err := s.createTicks(ctx, items, owners, now)
		if err != nil {
			fail(err)
			continue
		}
		for i, rerr := range refused {
			if rerr != nil {
				if _, err := s.refused(ctx, owners[i], rerr, now); err != nil {
					fail(err)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

// createTicks creates the backfills of items (the ticks owners) in one
// transaction and records each tick launched in it; it answers the
// engine's refusals by item.
func (s *Scheduler) createTicks(ctx context.Context, items []BatchItem, owners []launchTick, now time.Time) ([]error, error) {
	var launched []string
	refused, err := s.e.CreateBatch(ctx, items, func(tx *db.Tx, i int, c Created) error {
		l := owners[i]
		id := c.Backfill.ID
		t := db.Tick{ID: l.id, Schedule: l.sc.Name, ScheduledFor: db.Millis(l.at), EvaluatedAt: db.Millis(now), Outcome: db.TickLaunched,
			DefinitionHash: l.sc.Hash(), BackfillID: &id, Actor: scheduleActor(l.sc.Name)}
		if _, err := db.RecordTickTx(ctx, tx, t); err != nil {
			return err
		}
		if !c.Replayed {
			launched = append(launched, l.id)
		}
		return nil
	})
	if err == nil && len(launched) > 0 {
		s.log.Info("schedule ticks launched", "ticks", len(launched), "first", launched[0])
	}
	return refused, err
}

// refused records a tick whose backfill the engine refused.
func (s *Scheduler) refused(ctx context.Context, l launchTick, err error, now time.Time) (TickResult, error) {
	var ie *InputError
	if errors.As(err, &ie) && ie.Code == CodeEmptySelection {
		return s.record(ctx, l.sc, l.at, l.id, db.TickSkipped, SkipNothingToBuild+": "+ie.Msg, nil, false, scheduleActor(l.sc.Name), now)
	}
	msg := err.Error()
	if errors.As(err, &ie) {
		msg = ie.Msg
	}
	return s.record(ctx, l.sc, l.at, l.id, db.TickFailed, msg, nil, false, scheduleActor(l.sc.Name), now)
}

func (s *Scheduler) skipMany(ctx context.Context, sc *catalog.Schedule, listed []time.Time, more int64, moreLast time.Time, reason string, now time.Time) error {
	if len(listed) == 0 && more == 0 {
		return nil
	}
	k := db.SkippedTicks{Schedule: sc.Name, Reason: reason, DefinitionHash: sc.Hash(), Counted: more, At: db.Millis(now)}
	if more > 0 {
		k.CountedLast = db.Millis(moreLast)
	}
	for _, t := range listed {
		k.Listed = append(k.Listed, db.Millis(t))
	}
	return s.e.Store.RecordSkippedTicks(ctx, k)
}

// TickResult is what evaluating one tick did.
type TickResult struct {
	Tick     db.Tick
	Backfill *db.Backfill
}

// tick evaluates the tick of sc at at (id: its tick id): launched, queued
// or skipped, or failed with the engine's refusal. A store error is
// returned and nothing recorded, so that the tick is evaluated again.
func (s *Scheduler) tick(ctx context.Context, sc *catalog.Schedule, at time.Time, id string, manual bool, actor string, now time.Time) (TickResult, error) {
	outcome, reason, err := s.overlap(ctx, sc, manual)
	if err != nil {
		return TickResult{}, err
	}
	if outcome != "" {
		return s.record(ctx, sc, at, id, outcome, reason, nil, manual, actor, now)
	}
	return s.launch(ctx, sc, at, id, manual, actor, now)
}

// overlap says what a tick of sc does while the previous tick's backfill
// still runs: "" (launch), queued or skipped, with the reason. A manual
// tick and overlap allow always launch.
func (s *Scheduler) overlap(ctx context.Context, sc *catalog.Schedule, manual bool) (outcome, reason string, err error) {
	if manual || sc.Overlap == catalog.OverlapAllow {
		return "", "", nil
	}
	running, prev, err := s.previousRunning(ctx, sc.Name)
	switch {
	case err != nil || !running:
		return "", "", err
	case sc.Overlap == catalog.OverlapQueue:
		return db.TickQueued, fmt.Sprintf("waits for %s to end", prev), nil
	}
	return db.TickSkipped, fmt.Sprintf("%s (%s)", SkipPreviousRunning, prev), nil
}

// launch creates the tick's backfill and records the tick.
func (s *Scheduler) launch(ctx context.Context, sc *catalog.Schedule, at time.Time, id string, manual bool, actor string, now time.Time) (TickResult, error) {
	req, skip, err := s.e.TickRequest(ctx, sc, at)
	if manual && skip != "" && err == nil && sc.Target == catalog.TargetClosedWindows {
		// Run now between two ticks, when no window closed since the
		// previous one: it builds what that tick targeted (an hourly
		// schedule run at 10:25 the hour that ended at 10:00), not nothing.
		if prev, ok := sc.Cron.Prev(at); ok {
			if r, sk, perr := s.e.TickRequest(ctx, sc, prev); perr == nil && sk == "" {
				req, skip = r, ""
			}
		}
	}
	if err != nil {
		return s.record(ctx, sc, at, id, db.TickFailed, err.Error(), nil, manual, actor, now)
	}
	if skip != "" {
		return s.record(ctx, sc, at, id, db.TickSkipped, skip, nil, manual, actor, now)
	}
	created, err := s.e.Create(ctx, req, id, scheduleActor(sc.Name))
	var ie *InputError
	switch {
	case errors.As(err, &ie) && ie.Code == CodeEmptySelection:
		return s.record(ctx, sc, at, id, db.TickSkipped, SkipNothingToBuild+": "+ie.Msg, nil, manual, actor, now)
	case errors.As(err, &ie):
		return s.record(ctx, sc, at, id, db.TickFailed, ie.Msg, nil, manual, actor, now)
	case err != nil:
		return TickResult{}, err
	}
	r, err := s.record(ctx, sc, at, id, db.TickLaunched, "", &created.Backfill.ID, manual, actor, now)
	r.Backfill = &created.Backfill
	if err == nil && !created.Replayed {
		s.log.Info("schedule tick launched", "schedule", sc.Name, "tick", id, "backfill", created.Backfill.ID)
	}
	return r, err
}

func (s *Scheduler) record(ctx context.Context, sc *catalog.Schedule, at time.Time, id, outcome, reason string, backfill *string, manual bool, actor string, now time.Time) (TickResult, error) {
	t := db.Tick{ID: id, Schedule: sc.Name, ScheduledFor: db.Millis(at), EvaluatedAt: db.Millis(now), Outcome: outcome,
		DefinitionHash: sc.Hash(), BackfillID: backfill, Manual: manual, Actor: actor}
	if reason != "" {
		t.Reason = &reason
	}
	if outcome == db.TickFailed {
		s.log.Warn("schedule tick failed", "schedule", sc.Name, "tick", id, "err", reason)
	}
	_, err := s.e.Store.RecordTick(ctx, t)
	return TickResult{Tick: t}, err
}

// previousRunning reports whether the backfill of the schedule's last
// launched tick has not ended yet, and its id.
func (s *Scheduler) previousRunning(ctx context.Context, name string) (bool, string, error) {
	st, err := s.e.Store.ScheduleStateOf(ctx, name)
	if err != nil || st.LastBackfillID == nil {
		return false, "", err
	}
	b, err := s.e.Store.Backfill(ctx, *st.LastBackfillID)
	if errors.Is(err, db.ErrNotFound) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return !db.BackfillTerminal(b.State), b.ID, nil
}

// launchQueued launches the oldest queued tick once the previous tick's
// backfill has ended.
func (s *Scheduler) launchQueued(ctx context.Context, sc *catalog.Schedule, now time.Time) error {
	queued, err := s.e.Store.QueuedTicks(ctx, sc.Name)
	if err != nil || len(queued) == 0 {
		return err
	}
	running, _, err := s.previousRunning(ctx, sc.Name)
	if err != nil || running {
		return err
	}
	q := queued[0]
	_, err = s.launch(ctx, sc, db.FromMillis(q.ScheduledFor), q.ID, q.Manual, q.Actor, now)
	return err
}

// Trigger runs schedule name now, whatever its state (paused included):
// a manual tick "{schedule}:manual:{id}" that targets what a tick at now
// would. It answers the tick and its backfill, if any.
func (s *Scheduler) Trigger(ctx context.Context, name, actor string) (TickResult, error) {
	ws, _ := s.e.workspace()
	sc := ws.Schedule(name)
	if sc == nil {
		return TickResult{}, unknownSchedule(ws, name)
	}
	now := s.e.Now()
	if _, err := s.e.Store.EnsureScheduleState(ctx, name, db.Millis(now)); err != nil {
		return TickResult{}, err
	}
	id := fmt.Sprintf("%s:manual:%s", name, strings.ToLower(ulid.Make().String()))
	return s.tick(ctx, sc, now, id, true, actor, now)
}

// SetPaused pauses or resumes schedule name. Ticks that fall while it is
// paused are recorded as skipped and never launched after a resume.
func (s *Scheduler) SetPaused(ctx context.Context, name string, paused bool, actor string) (db.ScheduleState, error) {
	ws, _ := s.e.workspace()
	if ws.Schedule(name) == nil {
		return db.ScheduleState{}, unknownSchedule(ws, name)
	}
	now := s.e.Now()
	if _, err := s.e.Store.EnsureScheduleState(ctx, name, db.Millis(now)); err != nil {
		return db.ScheduleState{}, err
	}
	if !paused {
		// The ticks that fell while it was paused are skipped before it
		// resumes, so that none of them launches.
		if err := s.evaluate(ctx, ws.Schedule(name), now); err != nil {
			return db.ScheduleState{}, err
		}
	}
	st, changed, err := s.e.Store.SetSchedulePaused(ctx, name, paused, actor, db.Millis(now))
	if err != nil {
		return st, err
	}
	if !changed {
		state := "running"
		if paused {
			state = "paused"
		}
		return st, &InputError{Conflict: true, Field: "state", Code: CodeScheduleState, Params: map[string]string{"schedule": name, "state": state},
			Msg: fmt.Sprintf("schedule %s is already %s", name, state)}
	}
	s.Wake()
	return st, nil
}

// unknownSchedule is the 404 of a schedule the workspace does not declare.
func unknownSchedule(ws *catalog.Workspace, name string) error {
	return &InputError{NotFound: true, Field: "schedule", Code: CodeUnknownSchedule, Params: map[string]string{"schedule": name, "known": strings.Join(ws.ScheduleNames(), ", ")},
		Msg: fmt.Sprintf("unknown schedule %q", name)}
}
