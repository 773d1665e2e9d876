package jobs

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// A backfill whose assets this instance's workspace does not declare (it
// was created by an instance serving another workspace, or the asset was
// removed from the file since) cannot be planned here: the controller
// leaves it as it is and plans the others, and its wait reason says why.

// undeclaredLog remembers the running backfills logged as undeclared, so
// that each is logged once.
type undeclaredLog struct {
	mu   sync.Mutex
	seen map[string]string // backfill id → the undeclared assets logged
}

// undeclaredAssets are the assets of segs that ws does not declare, sorted
// and without duplicates.
func undeclaredAssets(ws *catalog.Workspace, segs []db.Segment) []string {
	var out []string
	for _, s := range segs {
		if ws == nil || ws.Asset(s.Asset) == nil {
			if !slices.Contains(out, s.Asset) {
				out = append(out, s.Asset)
			}
		}
	}
	slices.Sort(out)
	return out
}

// undeclaredWait is the wait reason of a backfill some of whose assets
// this instance's workspace does not declare.
func undeclaredWait(assets []string) *RunWait {
	return &RunWait{Reason: fmt.Sprintf("held: asset %s is not declared in this instance's workspace; the backfill is not planned here until the workspace declares it (or cancel the backfill)", strings.Join(assets, ", "))}
}

// skipUndeclared returns the plans whose assets ws all declares; it logs
// each backfill left out once.
func (e *Engine) skipUndeclared(plans []*bfPlan, ws *catalog.Workspace) []*bfPlan {
	kept := plans[:0]
	l := &e.undeclared
	l.mu.Lock()
	defer l.mu.Unlock()
	// Only the backfills undeclared now are remembered: one planned, or
	// gone, is forgotten (and logged again should it be undeclared again).
	seen := map[string]string{}
	for _, p := range plans {
		missing := undeclaredAssets(ws, p.segs)
		if len(missing) == 0 {
			kept = append(kept, p)
			continue
		}
		names := strings.Join(missing, ",")
		if l.seen[p.b.ID] != names {
			e.Log.Warn("backfill not planned: its assets are not declared in this instance's workspace", "backfill", p.b.ID, "assets", names)
		}
		seen[p.b.ID] = names
	}
	l.seen = seen
	return kept
}
