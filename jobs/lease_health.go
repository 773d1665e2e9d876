package jobs

import (
	"context"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// After an outage of the database (or of this instance's connection to it)
// longer than the lease TTL, every instance's heartbeat looks stale to the
// others. So that the instances do not take each other's attempts over
// when the database answers again:
//
//   - an instance plans and starts attempts only while its own last
//     heartbeat is recent (beatFresh); after reconnecting it heartbeats
//     before it plans (beatIfStale);
//   - it judges the others' leases expired only once it has itself been
//     connected (heartbeating) for a lease TTL since its last failure
//     (mayJudgeOthers): the others, stale for the same outage, had a TTL
//     to renew theirs.
//
// On SQLite the one server shares the database with nobody: both always
// hold.

// beatMargin is the part of the lease TTL left, at least, to an attempt
// this instance starts before its lease could expire: it plans only while
// its last heartbeat is younger than LeaseTTL - LeaseTTL/beatMargin.
const beatMargin = 4

// beatFresh says whether this instance's last heartbeat is recent enough to
// start attempts under its lease.
func (e *Engine) beatFresh() bool {
	if e.Store.Dialect() != db.Postgres {
		return true
	}
	last := e.lastBeat.Load()
	return last != 0 && time.Since(time.Unix(0, last)) <= e.opts.LeaseTTL-e.opts.LeaseTTL/beatMargin
}

// mayJudgeOthers says whether this instance may find other instances'
// leases expired: it has heartbeated without a failure for a lease TTL.
func (e *Engine) mayJudgeOthers() bool {
	if e.Store.Dialect() != db.Postgres {
		return true
	}
	since := e.connectedSince.Load()
	return since != 0 && e.beatFresh() && time.Since(time.Unix(0, since)) >= e.opts.LeaseTTL
}

// beatIfStale heartbeats now when the last heartbeat is older than half the
// lease TTL (the heartbeat loop failed, or the database was away), at most
// once per staleBeatRetry: a reconnected instance renews its lease before
// its next step plans.
func (e *Engine) beatIfStale(ctx context.Context) {
	if e.Store.Dialect() != db.Postgres {
		return
	}
	last := e.lastBeat.Load()
	if last != 0 && time.Since(time.Unix(0, last)) <= e.opts.LeaseTTL/2 {
		return
	}
	if tried := e.beatTried.Load(); tried != 0 && time.Since(time.Unix(0, tried)) < staleBeatRetry {
		return
	}
	e.beatTried.Store(time.Now().UnixNano())
	// Bounded: a server that does not answer at all (a partition) must not
	// hold the controller, which fences this instance's attempts.
	ctx, cancel := context.WithTimeout(ctx, e.opts.LeaseTTL/4)
	defer cancel()
	_ = e.heartbeat(ctx) // a failure is logged by the heartbeat loop
}

// staleBeatRetry is how often the controller itself tries a heartbeat while
// the last one is stale.
const staleBeatRetry = 100 * time.Millisecond

func (e *Engine) heartbeat(ctx context.Context) error {
	at := time.Now()
	err := e.Store.Heartbeat(ctx, e.owner, db.Millis(e.Now()))
	if err != nil {
		e.connectedSince.Store(0)
		return err
	}
	e.lastBeat.Store(at.UnixNano())
	e.connectedSince.CompareAndSwap(0, at.UnixNano())
	return nil
}

// oneLine is err's text on one line (pgx's dial errors span several).
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
