package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// Skip reasons of schedule ticks (db.Tick.Reason).
const (
	SkipPaused          = "paused"
	SkipNothingToBuild  = "nothing to build"
	SkipPreviousRunning = "previous still running"
)

// TickRequest is the backfill request a tick of schedule s at at makes:
// the windows of its assets that closed since the previous tick, the
// missing or failed ones within its missing_within window, or every
// partition of its static or dynamic assets. skip is set (and the request
// empty) when the tick targets no partition: "nothing to build: …".
func (e *Engine) TickRequest(ctx context.Context, s *catalog.Schedule, at time.Time) (req Request, skip string, err error) {
	ws, _ := e.workspace()
	req = Request{Assets: s.Assets, Priority: s.Priority,
		Title: fmt.Sprintf("Schedule %s, tick of %s", s.Name, at.In(s.Cron.Location()).Format("2006-01-02 15:04:05 MST"))}
	req.ChunkSize, req.MaxConcurrentRuns = LaunchDefaults(s.ChunkSize, s.MaxConcurrent)
	first := ws.Asset(s.Assets[0])
	if first == nil {
		return Request{}, "", fmt.Errorf("asset %s of schedule %s is no longer declared", s.Assets[0], s.Name)
	}
	if s.Target == catalog.TargetAll {
		// Every partition of each asset that has any (a dynamic set may
		// still be empty).
		dyn, err := e.Store.LoadDynamicKeys(ctx)
		if err != nil {
			return Request{}, "", err
		}
		req.Assets = nil
		for _, key := range s.Assets {
			if a := ws.Asset(key); a != nil && a.Scheme.Space(at, dyn).Len() > 0 {
				req.Assets = append(req.Assets, key)
			}
		}
		if len(req.Assets) == 0 {
			return Request{}, SkipNothingToBuild + ": no partitions yet", nil
		}
		req.Selector = Selector{Type: "range"}
		return req, "", nil
	}
	ts, ok := first.Scheme.(catalog.TimeScheme)
	if !ok {
		return Request{}, "", fmt.Errorf("asset %s of schedule %s is not time-partitioned", first.Key, s.Name)
	}
	sp := ts.Space(at, nil)
	var lo, hi int64
	if s.Target == catalog.TargetMissingWithin {
		lo, hi = catalog.WindowsWithin(ts, sp.Len(), at, s.MissingWithin)
	} else {
		prev, ok := s.Cron.Prev(at)
		if !ok {
			prev = at.Add(-time.Nanosecond)
		}
		lo, hi = catalog.ClosedWindows(ts, sp.Len(), prev, at)
	}
	if lo >= hi {
		return Request{}, fmt.Sprintf("%s: no window of %s closed since the previous tick", SkipNothingToBuild, first.Key), nil
	}
	req.Selector = Selector{Type: "range", Start: sp.Key(lo), End: sp.Key(hi - 1)}
	if s.Target == catalog.TargetMissingWithin {
		req.Selector.Type = "filter"
		req.Selector.Statuses = []string{"missing", "failed"}
	}
	return req, "", nil
}
