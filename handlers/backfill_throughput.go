package handlers

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// throughput fills rate, ETA and the chart from finished attempts.
func (h *Handler) throughput(ctx context.Context, d *views.BackfillDetail, b db.Backfill, now time.Time) error {
	d.Throughput, d.ETA = "—", "—"
	d.Chart = views.Chart{Empty: true, Width: 600, Height: 120, XLabel: "time", YLabel: "partitions finished"}
	if b.StartedAt == nil {
		switch {
		case b.State == db.BackfillCanceled:
			d.ETA = "canceled"
		case !db.BackfillTerminal(b.State):
			d.ETA = "not started"
		}
		return nil
	}
	end := db.Millis(now)
	if b.FinishedAt != nil {
		end = *b.FinishedAt
	}
	span := max(end-*b.StartedAt, 1)
	finished := b.PartitionsMaterialized + failures(b)
	rate := float64(finished) / (float64(span) / 1000) // partitions per second
	d.Throughput = catalog.HumanRate(rate, " partitions")
	remaining := b.TotalPartitions - finished
	var retryN, retryAt int64
	if b.State == db.BackfillRunning && b.RunsRunning == 0 && remaining > 0 {
		var err error
		if retryN, retryAt, err = h.Store.BackfillRetryWait(ctx, b.ID, db.Millis(now)); err != nil {
			return err
		}
	}
	setETA(d, b, remaining, retryN, retryAt, rate, now, zoneOf(ctx))
	if b.State == db.BackfillRunning && b.RunsRunning == 0 && retryN == 0 && h.Engine != nil {
		// Nothing runs and no retry is due: say what the next chunk waits
		// for (a throttled pool sends nothing over the stream meanwhile, so
		// the page refreshes itself).
		w, err := h.Engine.NextChunkWait(ctx, b)
		if err != nil {
			return err
		}
		if w != nil {
			d.ETA = "unknown yet: " + w.Reason
			d.Countdown = true
		}
	}
	if w := storeWait(h.Store.WriteHealth()); w != nil && b.State == db.BackfillRunning {
		// Nothing it does can be recorded until the store writes again
		// (the page refreshes itself to see that).
		d.ETA = "unknown yet: " + w.Reason
		d.Countdown = true
	}
	return h.throughputChart(ctx, d, b, span)
}

// setETA is the ETA of a started backfill from its state, what remains, the
// retries it waits for and its rate.
func setETA(d *views.BackfillDetail, b db.Backfill, remaining, retryN, retryAt int64, rate float64, now time.Time, loc *time.Location) {
	switch {
	case b.State == db.BackfillCanceled:
		d.ETA = "canceled"
	case b.State == db.BackfillCanceling:
		d.ETA = "canceling"
	case db.BackfillTerminal(b.State):
		d.ETA = "finished"
	case b.State == db.BackfillPaused:
		d.ETA = "paused"
	case remaining <= 0:
		d.ETA = "finishing"
	case b.RunsRunning == 0 && retryN > 0:
		// Nothing runs: the backfill waits out a retry's backoff, and
		// a rate-based ETA would only grow meanwhile.
		retries := "1 retry"
		if retryN > 1 {
			retries = fmt.Sprintf("%d retries", retryN)
		}
		d.ETA = fmt.Sprintf("waiting for %s, the first at %s (in %s)", retries,
			fmtClock(loc, db.FromMillis(retryAt)), fmtDur((time.Duration(retryAt-db.Millis(now)) * time.Millisecond).Round(time.Second)))
		// Nothing changes until the retry starts, so no update would come
		// over the stream: the page refreshes the countdown itself.
		d.Countdown = true
	case rate > 0:
		d.ETA = fmtDur(time.Duration(float64(remaining)/rate*1000) * time.Millisecond)
	default:
		d.ETA = "unknown yet"
	}
}

// throughputLag is how late a running backfill's throughput chart may be:
// its viewers (the page and its live summary, refreshed on every update)
// share one aggregation of its finished attempts per throughputLag instead
// of one each. The counts beside it are read at once; a change of the
// backfill's state (its end, a pause) is charted at once.
const throughputLag = 250 * time.Millisecond

// throughputKey is what a shared throughput chart is for.
type throughputKey struct {
	backfill     string
	stateVersion int64
	from, width  int64
}

// throughputChart is the chart of partitions finished per bar since b
// started, over span milliseconds.
func (h *Handler) throughputChart(ctx context.Context, d *views.BackfillDetail, b db.Backfill, span int64) error {
	width := max((span+chartBars-1)/chartBars, 1000)
	pts, err := h.throughputs.get(ctx, throughputKey{b.ID, b.StateVersion, *b.StartedAt, width}, func() ([]db.ThroughputPoint, error) {
		return h.Store.BackfillThroughput(ctx, b.ID, *b.StartedAt, width)
	})
	if err != nil || len(pts) == 0 {
		return err
	}
	n := (span + width - 1) / width
	n = max(n, 1)
	var peak int64
	for _, p := range pts {
		peak = max(peak, p.Done+p.Failed)
	}
	if peak == 0 {
		return nil
	}
	c := &d.Chart
	c.Empty, c.Max = false, peak
	c.XLabel = fmt.Sprintf("per %s, since %s", fmtDur(time.Duration(width)*time.Millisecond), fmtStamp(zoneOf(ctx), b.StartedAt))
	bw := float64(c.Width) / float64(n)
	for _, p := range pts {
		i := (p.At - *b.StartedAt) / width
		hgt := float64(p.Done+p.Failed) * float64(c.Height-4) / float64(peak)
		c.Points = append(c.Points, views.ChartPoint{
			X: float64(i) * bw, W: math.Max(bw-1, 1), Y: float64(c.Height) - hgt, H: hgt,
			Title: fmt.Sprintf("%s: %d succeeded, %d failed", fmtClock(zoneOf(ctx), db.FromMillis(p.At)), p.Done, p.Failed)})
	}
	return nil
}
