package jobs

import (
	"context"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// Leadership: of the instances on one database, one evaluates the
// schedules and polls the sensors, the holder of a lease with a TTL (River
// style). Every instance asks for it at each heartbeat; the holder renews
// it, the others get it once it has expired (its holder died) or was given
// up (a clean shutdown). A tick's backfill is created under the tick's id
// as its idempotency key, so even two leaders for a moment (a holder that
// stalled past its lease) would launch a tick once.

// automationLease names the lease of the schedules and poll sensors.
const automationLease = "automation"

// leaderPoll is how often the scheduler and the sensors of an instance
// that does not lead ask whether it leads now.
const leaderPoll = 250 * time.Millisecond

// Leading reports whether this instance holds the automation lease now:
// it asked for it less than three quarters of the lease TTL ago and got
// it (the last quarter is kept for clocks that disagree).
// An instance whose workspace differs from the cluster's never leads.
func (e *Engine) Leading() bool {
	return time.Now().UnixNano() < e.leadUntil.Load() && e.mayPlan()
}

// lead asks for the automation lease, or renews it, for one lease TTL.
func (e *Engine) lead(ctx context.Context) error {
	if !e.mayPlan() {
		// Its workspace differs from the cluster's: its schedules and
		// sensors are not the cluster's (workspace_check.go).
		if e.leadUntil.Swap(0) != 0 {
			e.Log.Warn("this server gives up the schedules and sensors: its workspace differs from the cluster's")
			e.stepDown(ctx)
		}
		return nil
	}
	asked := time.Now()
	now := e.Now()
	ok, err := e.Store.LeadFor(ctx, automationLease, e.owner, db.Millis(now), db.Millis(now.Add(e.opts.LeaseTTL)))
	was := e.Leading()
	if err != nil || !ok {
		e.leadUntil.Store(0)
		switch {
		case was && err != nil:
			e.Log.Warn("this server no longer runs the schedules and sensors: it could not renew their lease", "err", oneLine(err))
		case was:
			e.Log.Warn("this server no longer runs the schedules and sensors: another holds their lease")
		}
		return err
	}
	e.leadUntil.Store(asked.Add(e.opts.LeaseTTL * 3 / 4).UnixNano())
	if !was {
		e.Log.Info("this server runs the schedules and sensors (it holds their lease)", "owner", e.owner)
	}
	return nil
}

// stepDown gives the automation lease up at shutdown.
func (e *Engine) stepDown(ctx context.Context) {
	e.leadUntil.Store(0)
	if err := e.Store.StepDown(ctx, automationLease, e.owner); err != nil {
		e.Log.Warn("give up the schedules' lease", "err", err)
	}
}

// waitLeading waits until this instance leads or ctx ends; it reports
// whether it leads.
func (e *Engine) waitLeading(ctx context.Context) bool {
	for !e.Leading() {
		t := time.NewTimer(leaderPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	return true
}
