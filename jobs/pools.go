package jobs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Pools: a pool's cap and throttle hold across every instance on the
// database. Each controller step counts, in its transaction (steps are
// serialized across instances, db.LockSteps), the attempts running now
// per pool and those started within each throttle's period, whoever owns
// them; the runs the step starts are added as it goes. A remote service's
// slow-down (Retry-After) is recorded in the database by the instance
// whose run was told (db.SlowPool), and each step reads them all.

// poolState keeps what the last step counted (for the explanations of
// why a run waits) and the remote slow-downs.
type poolState struct {
	mu       sync.Mutex
	use      map[string]int     // running attempts per pool, as the last step counted
	starts   map[string][]int64 // attempts started within the throttle's period, sorted (Unix ms)
	slowTill map[string]time.Time
	// record keeps a slow-down this instance was told for the others
	// (the Engine's: db.Store.SlowPool); nil in tests of the state alone.
	record func(pool string, until time.Time)
	// launched is when this instance launched the command of each recent
	// attempt of a pool (Unix ms), after the step that recorded its start
	// committed: see countPools.
	launched map[launchKey]int64
}

// launchKey names an attempt: its run and number.
type launchKey struct {
	run     string
	attempt int64
}

// launchSlack is how much earlier than a throttle's period countPools
// reads recorded starts: an attempt recorded before the period whose
// command was launched within it (its step's commit took that long)
// still counts.
const launchSlack = 10 * time.Second

func newPoolState() *poolState {
	return &poolState{use: map[string]int{}, starts: map[string][]int64{}, slowTill: map[string]time.Time{}, launched: map[launchKey]int64{}}
}

// launch records that the commands of attempts of pools were launched at
// at: once their step has committed, again when their executors begin,
// and again once a command's process has started (Work.began); the
// latest counts.
func (p *poolState) launch(acts []*active, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range acts {
		if a.pool != "" {
			k := launchKey{a.run.ID, a.attempt}
			p.launched[k] = max(p.launched[k], db.Millis(at))
		}
	}
}

// started is when attempt a's throttle counts it started: when this
// instance launched its command, or, for another instance's attempt, its
// recorded start.
func (p *poolState) started(a db.RunningAttempt) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(a.StartedAt, p.launched[launchKey{a.RunID, a.Attempt}])
}

// forgetLaunches forgets the launches before before (Unix ms): no
// throttle's period reaches them.
func (p *poolState) forgetLaunches(before int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, at := range p.launched {
		if at < before {
			delete(p.launched, k)
		}
	}
}

// poolUse is one step's count of each pool: the attempts running and those
// started within its throttle's period (Unix ms, sorted), every instance's.
type poolUse struct {
	running map[string]int
	starts  map[string][]int64
}

// countPools counts, in tx, each pool's running attempts and its throttle's
// recent starts across instances; pools without cap nor throttle are not
// counted (nor read).
func (e *Engine) countPools(ctx context.Context, tx *db.Tx, ws *catalog.Workspace, ids map[string]int64, now time.Time) (poolUse, error) {
	u := poolUse{running: map[string]int{}, starts: map[string][]int64{}}
	if len(ws.Pools) == 0 {
		return u, nil
	}
	nowMs := db.Millis(now)
	slow, err := db.PoolSlowDowns(ctx, tx, nowMs)
	if err != nil {
		return u, err
	}
	for pool, until := range slow {
		e.pools.extend(pool, db.FromMillis(until))
	}
	capped, throttled := false, false
	for _, def := range ws.Pools {
		capped = capped || def.MaxConcurrentRuns > 0
		throttled = throttled || def.Throttle != nil && def.Throttle.Runs > 0
	}
	if !capped && !throttled {
		return u, nil
	}
	poolOf := map[int64]string{}
	assetsOf := map[string][]int64{}
	for key, id := range ids {
		if a := ws.Asset(key); a != nil && a.Pool != "" {
			poolOf[id] = a.Pool
			assetsOf[a.Pool] = append(assetsOf[a.Pool], id)
		}
	}
	if capped {
		run, err := db.AttemptsRunningNow(ctx, tx)
		if err != nil {
			return u, err
		}
		for _, a := range run {
			if p := poolOf[a.AssetID]; p != "" {
				u.running[p]++
			}
		}
	}
	var longest time.Duration
	for _, def := range ws.Pools {
		if def.Throttle != nil {
			longest = max(longest, def.Throttle.Per)
		}
	}
	e.pools.forgetLaunches(nowMs - (longest + launchSlack).Milliseconds())
	for name, def := range ws.Pools {
		if def.Throttle == nil || def.Throttle.Runs <= 0 || len(assetsOf[name]) == 0 {
			continue
		}
		// An attempt counts from when its command was launched: a step
		// records its starts at its time and launches their commands once
		// it has committed, so a slow commit (under make test's race pass:
		// a second) would otherwise let the commands of two steps begin
		// closer together than the throttle allows (8 within 89 ms under
		// a throttle of 4 a second).
		since := nowMs - def.Throttle.Per.Milliseconds()
		started, err := db.AttemptStartsSince(ctx, tx, assetsOf[name], since-launchSlack.Milliseconds())
		if err != nil {
			return u, err
		}
		for _, a := range started {
			if at := e.pools.started(a); at >= since {
				u.starts[name] = append(u.starts[name], at)
			}
		}
		slices.Sort(u.starts[name])
	}
	e.pools.keep(u)
	return u, nil
}

// keep records what a step counted, for the explanations.
func (p *poolState) keep(u poolUse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.use = u.running
	p.starts = u.starts
}

func (p *poolState) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.use))
	for k, v := range p.use {
		out[k] = v
	}
	return out
}

// admit reports whether one more run of pool may start now, given u: its
// cap, a remote slow-down and its throttle (no more than Runs starts
// within any period Per, on every instance).
func (p *poolState) admit(ws *catalog.Workspace, pool string, u poolUse, now time.Time) bool {
	def, ok := ws.Pools[pool]
	if !ok {
		return true
	}
	if def.MaxConcurrentRuns > 0 && u.running[pool] >= def.MaxConcurrentRuns {
		return false
	}
	p.mu.Lock()
	slow := now.Before(p.slowTill[pool])
	p.mu.Unlock()
	if slow {
		return false
	}
	return def.Throttle == nil || def.Throttle.Runs <= 0 || len(u.starts[pool]) < def.Throttle.Runs
}

// take counts a run of pool started at now in u.
func (u poolUse) take(pool string, now time.Time) {
	u.running[pool]++
	u.starts[pool] = append(u.starts[pool], db.Millis(now))
}

// holding says what holds pool's new runs now besides its cap: a remote
// slow-down, or a throttle with no run left; "" when nothing does.
func (p *poolState) holding(ws *catalog.Workspace, pool string, now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if till := p.slowTill[pool]; now.Before(till) {
		return fmt.Sprintf("the remote service asked to slow down until %s UTC (Retry-After or rate-limit headers)", till.UTC().Format("15:04:05"))
	}
	def, ok := ws.Pools[pool]
	if !ok || def.Throttle == nil || def.Throttle.Runs <= 0 {
		return ""
	}
	nowMs, per := db.Millis(now), def.Throttle.Per.Milliseconds()
	var recent []int64
	for _, s := range p.starts[pool] {
		if s >= nowMs-per {
			recent = append(recent, s)
		}
	}
	if len(recent) < def.Throttle.Runs {
		return ""
	}
	next := recent[len(recent)-def.Throttle.Runs] + per - nowMs
	sig := fmt.Sprintf("%d %s per %s", def.Throttle.Runs, plural(int64(def.Throttle.Runs), "run", "runs"), catalog.HumanDuration(def.Throttle.Per))
	// Under a second it said "in about 0 ms" (rounded to the second).
	when := "within a second"
	if wait := time.Duration(max(next, 0)) * time.Millisecond; wait >= time.Second {
		when = "in about " + catalog.HumanDuration(wait.Round(time.Second))
	}
	return fmt.Sprintf("its throttle (%s) has no run left; the next %s", sig, when)
}

// SlowDown keeps pool from starting runs until t (Retry-After, rate
// limits), on every instance: the slow-down is recorded for them.
func (p *poolState) SlowDown(pool string, t time.Time) {
	if pool == "" {
		return
	}
	if p.extend(pool, t) && p.record != nil {
		p.record(pool, t)
	}
}

// extend moves pool's slow-down to t if that is later; it reports whether
// it did.
func (p *poolState) extend(pool string, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.slowTill[pool]) {
		p.slowTill[pool] = t
		return true
	}
	return false
}

// recordSlowDown records pool's slow-down until until for every instance;
// this instance holds the pool meanwhile whether or not that succeeds.
func (e *Engine) recordSlowDown(pool string, until time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Store.SlowPool(ctx, pool, db.Millis(until)); err != nil {
		e.Log.Warn("the pool's slow-down is not recorded for the other instances", "pool", pool, "until", until.UTC().Format(time.RFC3339), "err", err)
	}
}
