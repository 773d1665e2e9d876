package handlers

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// Workspace is the loaded workspace file with the store ids of its assets.
type Workspace struct {
	*catalog.Workspace
	Source string // file path, or "embedded default workspace"
	IDs    map[string]int64
	// Path is the workspace file a reload reads again ("" for the embedded
	// workspace, which has none).
	Path string
	// Unsynced: the workspace was not synced into the shared catalog
	// (the assets table) because it differs from the live instances'
	// (Differs says how); IDs are the catalog's as it is.
	Unsynced bool
	Differs  *jobs.WorkspaceMismatch
}

// Handler serves every page and API action.
type Handler struct {
	Store *db.Store
	Log   *slog.Logger
	Now   func() time.Time
	Auth  *Auth // accounts; web.New fills a default when nil
	// Engine creates and steers backfills (nil: backfill pages answer 503).
	Engine *jobs.Engine
	// Scheduler launches the workspace's schedules' ticks (nil: none run).
	Scheduler *jobs.Scheduler
	// Sensors evaluates poll sensors and answers operators (nil: none run).
	Sensors *jobs.Sensors
	// MaxStreams bounds the live-update event streams open at once, and
	// MaxStreamsPerUser those of one user (all its sessions and API tokens
	// together) or, for anonymous viewers, one address; 0: DefaultMaxStreams,
	// DefaultMaxStreamsPerUser.
	MaxStreams, MaxStreamsPerUser int
	// StreamCredentialCheck is how often an open event stream checks its
	// credential still holds (0: DefaultStreamCredentialCheck).
	StreamCredentialCheck time.Duration
	streams               streamSlots
	ws                    atomic.Pointer[Workspace]
	// attempts receives finished attempts for the metrics (set by the router).
	attempts atomic.Pointer[jobs.AttemptObserver]
	// eventTexts memoizes the timeline's event summaries.
	eventTexts eventTexts
	// throughputs shares a backfill's throughput chart among its viewers
	// (backfill_throughput.go).
	throughputs recentMemo[throughputKey, []db.ThroughputPoint]
	// pageModels shares the models of the pages listing assets among their
	// viewers (page_models.go).
	pageModels recentMemo[pageKey, any]
	// grids shares a backfill's outcome grids among its viewers, by its row
	// (backfill_pages.go).
	grids recentMemo[gridsKey, []views.ChunkGrid]
	// reloadMu makes workspace reloads one at a time (two would race to swap).
	reloadMu sync.Mutex
}

// SetAttemptObserver sets where ObserveAttempt sends finished attempts.
func (h *Handler) SetAttemptObserver(f jobs.AttemptObserver) { h.attempts.Store(&f) }

// ObserveAttempt passes a finished attempt to the observer set by
// SetAttemptObserver, if any: the engine is built before the router that
// owns the metrics, so it is given this method.
func (h *Handler) ObserveAttempt(asset, state string, d time.Duration) {
	if f := h.attempts.Load(); f != nil {
		(*f)(asset, state, d)
	}
}

// New returns a Handler serving ws.
func New(store *db.Store, ws *Workspace, log *slog.Logger) *Handler {
	h := &Handler{Store: store, Log: log, Now: time.Now}
	h.throughputs.ttl = throughputLag
	h.pageModels.ttl = db.PageStaleLag
	h.grids.ttl = gridsLag
	h.ws.Store(ws)
	return h
}

// Workspace returns the current workspace.
func (h *Handler) Workspace() *Workspace { return h.ws.Load() }

// SetWorkspace swaps in a reloaded workspace (and has the scheduler look
// at its schedules at once).
func (h *Handler) SetWorkspace(ws *Workspace) {
	h.ws.Store(ws)
	if h.Scheduler != nil {
		h.Scheduler.Wake()
	}
}

// LoadWorkspace syncs ws into the store and returns it with asset ids.
func LoadWorkspace(ctx context.Context, store *db.Store, ws *catalog.Workspace, source, actor string, now time.Time) (*Workspace, error) {
	if err := store.SyncWorkspace(ctx, ws, actor, now); err != nil {
		return nil, err
	}
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		return nil, err
	}
	return &Workspace{Workspace: ws, Source: source, IDs: ids}, nil
}

// assetCtx is one asset resolved for a request: definition, store id and its
// partition space as of now.
type assetCtx struct {
	Def   *catalog.Asset
	ID    int64
	Space catalog.Space
	Now   time.Time
	// Zone is the reader's display zone for the times in tile titles (nil: UTC).
	Zone *time.Location
}

// routeAsset is the asset of the route's :key (a 404 when the workspace
// does not declare it).
func (h *Handler) routeAsset(c echo.Context) (assetCtx, error) {
	return h.asset(c.Request().Context(), pathParam(c, "key"))
}

// keyRange is the index range of a's partitions from start to end: from
// its first, or to its last, when start or end is empty. a must have
// partitions.
func (a assetCtx) keyRange(start, end string) (lo, hi int64, err error) {
	if start == "" {
		start = a.Space.Key(0)
	}
	if end == "" {
		end = a.Space.Key(a.Space.Len() - 1)
	}
	return catalog.ParseRange(a.Space, a.Def.Scheme, start, end)
}

// spaces resolves every asset's space with one read of the dynamic keys.
func (h *Handler) assets(ctx context.Context) ([]assetCtx, error) {
	ws := h.Workspace()
	dyn, err := h.Store.LoadDynamicKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	out := make([]assetCtx, 0, len(ws.Assets))
	for _, a := range ws.Assets {
		out = append(out, assetCtx{Def: a, ID: ws.IDs[a.Key], Space: a.Scheme.Space(now, dyn), Now: now, Zone: zoneOf(ctx)})
	}
	return out, nil
}

// asset resolves one asset by key, or a 404 user error.
func (h *Handler) asset(ctx context.Context, key string) (assetCtx, error) {
	ws := h.Workspace()
	a := ws.Asset(key)
	if a == nil {
		return assetCtx{}, assetNotFound(key, ws.Source)
	}
	var dyn catalog.DynamicKeys
	if hasDynamic(a.Scheme) {
		d, err := h.Store.LoadDynamicKeys(ctx)
		if err != nil {
			return assetCtx{}, err
		}
		dyn = d
	}
	now := h.Now()
	return assetCtx{Def: a, ID: ws.IDs[a.Key], Space: a.Scheme.Space(now, dyn), Now: now, Zone: zoneOf(ctx)}, nil
}

func hasDynamic(s catalog.Scheme) bool {
	if s.Kind() == catalog.KindDynamic {
		return true
	}
	if m, ok := s.(catalog.MultiScheme); ok {
		for _, d := range m.Dimensions() {
			if hasDynamic(d.Scheme) {
				return true
			}
		}
	}
	return false
}
