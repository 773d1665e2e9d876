package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Instances sharing a PostgreSQL store must serve one workspace: an asset
// defined two ways would be planned one way here and run another way there.
// Each instance records its workspace's fingerprint (each asset's name and
// a hash of its definition) in the store; one whose workspace differs from
// that of a live instance that recorded its own earlier says which assets
// differ (the log, /readyz) and does not plan until they agree again.

// WorkspaceMismatch says how this instance's workspace differs from
// another live instance's.
type WorkspaceMismatch struct {
	// Instance is the other instance's worker id.
	Instance string
	// Assets are the names of the assets defined differently, or defined
	// on one instance only, sorted.
	Assets []string
}

func (m *WorkspaceMismatch) Error() string {
	return fmt.Sprintf("this instance's workspace differs from that of instance %s, which serves the database since before it: assets %s differ; this instance does not plan backfills until every instance serves the same workspace file",
		m.Instance, strings.Join(m.Assets, ", "))
}

// workspaceCheck is the engine's view of the other instances' workspaces.
type workspaceCheck struct {
	mu       sync.Mutex
	mismatch *WorkspaceMismatch
	kept     db.WorkerWorkspace // this instance's record as last written
	keptAt   time.Time
	// The fingerprint of the workspace ws (computed again only when the
	// workspace is another).
	ws     *catalog.Workspace
	fp     string
	hashes map[string]string
	assets string
}

// workspaceRewrite is how often an instance writes its workspace's record
// again while it does not change (otherwise a check only reads).
const workspaceRewrite = 30 * time.Second

// WorkspaceMismatch is how this instance's workspace differs from an
// earlier live instance's, or nil when it does not (always on SQLite).
func (e *Engine) WorkspaceMismatch() *WorkspaceMismatch {
	e.wsCheck.mu.Lock()
	defer e.wsCheck.mu.Unlock()
	return e.wsCheck.mismatch
}

// mayPlan says whether the controller plans: not while the workspace
// differs from another instance's.
func (e *Engine) mayPlan() bool { return e.WorkspaceMismatch() == nil }

// assetHash is a hash of an asset's definition (not of where it is in the
// file).
func assetHash(a *catalog.Asset) string {
	c := *a
	c.Line = 0
	var scheme, loc string
	if c.Scheme != nil {
		b, _ := json.Marshal(c.Scheme)
		scheme = fmt.Sprintf("%T %s %s", c.Scheme, c.Scheme.Describe(), b)
		c.Scheme = nil
	}
	if c.Freshness != nil {
		f := *c.Freshness
		if f.Location != nil {
			loc = f.Location.String()
		}
		f.Location = nil
		c.Freshness = &f
	}
	b, _ := json.Marshal(struct {
		A      catalog.Asset
		Scheme string
		Loc    string
	}{c, scheme, loc})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// workspaceFingerprint is ws's fingerprint and its assets' hashes by name.
func workspaceFingerprint(ws *catalog.Workspace) (string, map[string]string) {
	hashes := make(map[string]string, len(ws.Assets))
	names := make([]string, 0, len(ws.Assets))
	for _, a := range ws.Assets {
		hashes[a.Key] = assetHash(a)
		names = append(names, a.Key)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s=%s\n", n, hashes[n])
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), hashes
}

// differingAssets are the names of the assets whose hashes differ between
// a and b, or that one of them lacks, sorted.
func differingAssets(a, b map[string]string) []string {
	var out []string
	for n, h := range a {
		if b[n] != h {
			out = append(out, n)
		}
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkWorkspace records this instance's workspace and compares it with
// the live instances' that recorded theirs earlier.
func (e *Engine) checkWorkspace(ctx context.Context) error {
	ws, _ := e.workspace()
	if ws == nil {
		return nil
	}
	e.wsCheck.mu.Lock()
	same := e.wsCheck.ws == ws
	fp, hashes, assets := e.wsCheck.fp, e.wsCheck.hashes, e.wsCheck.assets
	mine, at := e.wsCheck.kept, e.wsCheck.keptAt
	e.wsCheck.mu.Unlock()
	if !same {
		fp, hashes = workspaceFingerprint(ws)
		b, err := json.Marshal(hashes)
		if err != nil {
			return err
		}
		assets = string(b)
		e.wsCheck.mu.Lock()
		e.wsCheck.ws, e.wsCheck.fp, e.wsCheck.hashes, e.wsCheck.assets = ws, fp, hashes, assets
		e.wsCheck.mu.Unlock()
	}
	now := e.Now()
	var err error
	if mine.Fingerprint != fp || now.Sub(at) >= workspaceRewrite {
		if mine, err = e.Store.KeepWorkerWorkspace(ctx, db.WorkerWorkspace{Owner: e.owner, Fingerprint: fp, Assets: assets, Since: db.Millis(now)}); err != nil {
			return err
		}
		e.wsCheck.mu.Lock()
		e.wsCheck.kept, e.wsCheck.keptAt = mine, now
		e.wsCheck.mu.Unlock()
	}
	others, err := e.Store.LiveWorkerWorkspaces(ctx, e.owner, db.Millis(now.Add(-e.opts.LeaseTTL)))
	if err != nil {
		return err
	}
	var mm *WorkspaceMismatch
	for _, o := range others {
		earlier := o.Since < mine.Since || (o.Since == mine.Since && o.Owner < mine.Owner)
		if !earlier || o.Fingerprint == fp {
			continue
		}
		var theirs map[string]string
		if err := json.Unmarshal([]byte(o.Assets), &theirs); err != nil {
			return err
		}
		mm = &WorkspaceMismatch{Instance: o.Owner, Assets: differingAssets(hashes, theirs)}
		break
	}
	e.wsCheck.mu.Lock()
	was := e.wsCheck.mismatch
	e.wsCheck.mismatch = mm
	e.wsCheck.mu.Unlock()
	switch {
	case mm != nil && (was == nil || !slices.Equal(was.Assets, mm.Assets)):
		e.Log.Error("workspace differs from another instance's; not planning", "instance", mm.Instance, "assets", strings.Join(mm.Assets, ","), "err", mm.Error())
	case mm == nil && was != nil:
		e.Log.Info("workspace agrees with the other instances again; planning")
	}
	return nil
}

// workspaceCheckEvery is how often an instance compares its workspace
// with the others'.
var workspaceCheckEvery = time.Second

// watchWorkspaces checks the workspace each workspaceCheckEvery until ctx
// ends.
func (e *Engine) watchWorkspaces(ctx context.Context) {
	t := time.NewTicker(workspaceCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.checkWorkspace(ctx); err != nil && ctx.Err() == nil {
			e.Log.Warn("workspace not compared with the other instances'", "err", err)
		}
	}
}
