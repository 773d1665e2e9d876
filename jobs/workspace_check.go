package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
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
	// on one instance only, sorted; a schedule, sensor or pool is named
	// "schedule:NAME", "sensor:NAME" or "pool:NAME".
	Assets []string
}

func (m *WorkspaceMismatch) Error() string {
	return fmt.Sprintf("this instance's workspace differs from that of instance %s, which serves the database since before it: assets %s differ; this instance does not plan backfills until every instance serves the same workspace file",
		m.Instance, strings.Join(m.Assets, ", "))
}

// Refusal is the error of an action this instance refuses while its
// workspace differs: it names the instance and what differs, and says that
// nothing was written.
func (m *WorkspaceMismatch) Refusal(action string) error {
	return &InputError{Conflict: true, Code: CodeWorkspaceDiffers, Params: map[string]string{"instance": m.Instance, "assets": strings.Join(m.Assets, ",")},
		Msg: fmt.Sprintf("this instance does not %s: its workspace differs from the cluster's (instance %s) in %s; nothing was written. Send the request to an instance serving the cluster's workspace, or start this one with the same --workspace file",
			action, m.Instance, strings.Join(m.Assets, ", "))}
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
// Nor while the workspace served is not the one in the shared catalog.
func (e *Engine) mayPlan() bool {
	return e.WorkspaceMismatch() == nil && (e.opts.WorkspaceSynced == nil || e.opts.WorkspaceSynced())
}

// CheckWorkspace compares the workspace served with the live instances'
// now (after a reload), rather than at the next periodic check.
func (e *Engine) CheckWorkspace(ctx context.Context) error {
	if e.Store.Dialect() != db.Postgres {
		return nil
	}
	return e.checkWorkspace(ctx)
}

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

// automationHash is a hash of a sensor's or pool's definition, without
// its line in the file.
func automationHash(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// workspaceFingerprint is ws's fingerprint and the hashes by name of its
// assets, schedules ("schedule:NAME"), sensors ("sensor:NAME") and pools
// ("pool:NAME").
func workspaceFingerprint(ws *catalog.Workspace) (string, map[string]string) {
	hashes := make(map[string]string, len(ws.Assets)+len(ws.Schedules)+len(ws.Sensors)+len(ws.Pools))
	for _, a := range ws.Assets {
		hashes[a.Key] = assetHash(a)
	}
	for _, sc := range ws.Schedules {
		hashes["schedule:"+sc.Name] = sc.Hash()
	}
	for _, sn := range ws.Sensors {
		c := *sn
		c.Line = 0
		hashes["sensor:"+sn.Name] = automationHash(c)
	}
	for name, p := range ws.Pools {
		p.Line = 0
		hashes["pool:"+name] = automationHash(p)
	}
	names := slices.Sorted(maps.Keys(hashes))
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
	if mm == nil && e.opts.SyncWorkspace != nil {
		// It agrees (again): the catalog is synced with it before it
		// plans, if it was not (it differed when it was loaded).
		if err := e.opts.SyncWorkspace(ctx); err != nil {
			return fmt.Errorf("sync the workspace into the catalog: %w", err)
		}
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
	var compare spell // said once a spell of failed comparisons
	every(ctx, workspaceCheckEvery, func() {
		compare.note(ctx, e.Log, e.checkWorkspace(ctx), "workspace not compared with the other instances'; said once until it is again",
			"workspace compared with the other instances' again")
	})
}

// CompareWorkspace compares ws with the workspaces of the instances live
// on store (none on SQLite) before this instance writes anything of it:
// it returns how ws differs from the earliest live one that differs, or
// nil. A server starting calls it before it syncs its workspace into the
// shared catalog, and does not sync when they differ. ttl is the workers'
// lease TTL (0: the default).
func CompareWorkspace(ctx context.Context, store *db.Store, ws *catalog.Workspace, ttl time.Duration) (*WorkspaceMismatch, error) {
	if store.Dialect() != db.Postgres || ws == nil {
		return nil, nil
	}
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	others, err := store.LiveWorkerWorkspaces(ctx, "", db.Millis(time.Now().Add(-ttl)))
	if err != nil {
		return nil, err
	}
	return firstDiffering(ws, others, func(db.WorkerWorkspace) bool { return true })
}

// CompareWorkspace is the package's CompareWorkspace for a workspace this
// running instance would serve next (a reload): ws against the live
// instances that serve the database since before this one, or against
// every live one when ws is another workspace than this one's (the first
// instance of several to reload a changed file does not sync it while the
// others serve the old one; the last one does).
func (e *Engine) CompareWorkspace(ctx context.Context, ws *catalog.Workspace) (*WorkspaceMismatch, error) {
	if e.Store.Dialect() != db.Postgres || ws == nil {
		return nil, nil
	}
	e.wsCheck.mu.Lock()
	mine := e.wsCheck.kept
	e.wsCheck.mu.Unlock()
	others, err := e.Store.LiveWorkerWorkspaces(ctx, e.owner, db.Millis(e.Now().Add(-e.opts.LeaseTTL)))
	if err != nil {
		return nil, err
	}
	// Another workspace than the one recorded makes this instance the
	// latest (its record's since starts again): every live instance
	// counts then, not only those since before it.
	fp, _ := workspaceFingerprint(ws)
	return firstDiffering(ws, others, func(o db.WorkerWorkspace) bool {
		return mine.Owner == "" || fp != mine.Fingerprint || o.Since < mine.Since || (o.Since == mine.Since && o.Owner < mine.Owner)
	})
}

// firstDiffering is how ws differs from the first of others that counts
// and has another fingerprint, or nil.
func firstDiffering(ws *catalog.Workspace, others []db.WorkerWorkspace, counts func(db.WorkerWorkspace) bool) (*WorkspaceMismatch, error) {
	fp, hashes := workspaceFingerprint(ws)
	for _, o := range others {
		if !counts(o) || o.Fingerprint == fp {
			continue
		}
		var theirs map[string]string
		if err := json.Unmarshal([]byte(o.Assets), &theirs); err != nil {
			return nil, err
		}
		return &WorkspaceMismatch{Instance: o.Owner, Assets: differingAssets(hashes, theirs)}, nil
	}
	return nil, nil
}
