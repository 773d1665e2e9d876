package handlers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// ReloadWorkspace reads the workspace file again, validates it and, only
// when it is valid, syncs its assets into the store (one transaction: new
// assets added, changed definitions versioned, removed ones marked) and
// serves it from then on. On any problem the server keeps the workspace it
// has, and the error says what is wrong.
func (h *Handler) ReloadWorkspace(ctx context.Context, actor string) (*Workspace, error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	cur := h.Workspace()
	if cur.Path == "" {
		return nil, Conflict("this server serves the %s, which has no file to reload; start it with --workspace FILE to reload a workspace file", cur.Source)
	}
	data, err := os.ReadFile(cur.Path)
	if err != nil {
		return nil, Conflict("could not read the workspace file %s (%v); the server keeps the workspace it has", cur.Path, err)
	}
	ws, err := catalog.ParseWorkspace(cur.Path, data)
	if err != nil {
		var ve *catalog.ValidationError
		if errors.As(err, &ve) {
			return nil, BadRequest("workspace", "workspace %s has %s, so it was not reloaded (the server keeps the workspace it has):\n%s", cur.Path, countOf(len(ve.Problems), "problem"), ve.Error())
		}
		return nil, BadRequest("workspace", "workspace %s was not reloaded: %v", cur.Path, err)
	}
	if h.Engine != nil {
		// Another instance on the database serves another workspace: this
		// one serves the file without writing it into the shared catalog,
		// and does not plan until they agree (the last instance reloaded
		// syncs it).
		mm, err := h.Engine.CompareWorkspace(ctx, ws)
		if err != nil {
			return nil, fmt.Errorf("compare workspace %s with the other instances': %w", cur.Path, err)
		}
		if mm != nil {
			return h.serveUnsynced(ctx, ws, cur, mm)
		}
	}
	if err := CheckUnfinishedBackfills(ctx, h.Store, ws); err != nil {
		var ue *UserError
		if errors.As(err, &ue) {
			ue.Message = "the workspace was not reloaded (the server keeps the workspace it has): " + ue.Message
		}
		return nil, err
	}
	loaded, err := LoadWorkspace(ctx, h.Store, ws, cur.Source, actor, h.Now())
	if err != nil {
		return nil, fmt.Errorf("sync workspace %s: %w", cur.Path, err)
	}
	loaded.Path = cur.Path
	h.SetWorkspace(loaded)
	if h.Log != nil {
		h.Log.Info("workspace reloaded", "path", cur.Path, "assets", len(ws.Assets), "by", actor)
	}
	return loaded, nil
}

// serveUnsynced serves ws, which differs from the live instances'
// workspace as mm says, without syncing it into the catalog: the engine
// does not plan, and refuses new backfills, until they agree.
func (h *Handler) serveUnsynced(ctx context.Context, ws *catalog.Workspace, cur *Workspace, mm *jobs.WorkspaceMismatch) (*Workspace, error) {
	ids, err := h.Store.AssetIDs(ctx)
	if err != nil {
		return nil, err
	}
	loaded := &Workspace{Workspace: ws, Source: cur.Source, IDs: ids, Path: cur.Path, Unsynced: true, Differs: mm}
	h.SetWorkspace(loaded)
	if h.Log != nil {
		h.Log.Error("workspace reloaded but not synced into the shared catalog: it differs from another instance's; not planning",
			"path", cur.Path, "instance", mm.Instance, "assets", strings.Join(mm.Assets, ","))
	}
	if err := h.Engine.CheckWorkspace(ctx); err != nil && h.Log != nil {
		h.Log.Warn("workspace not compared with the other instances'", "err", err)
	}
	return loaded, nil
}

// SyncUnsyncedWorkspace syncs the workspace served into the catalog if it
// was not (it differed from the live instances' when loaded); the engine
// calls it once they agree.
func (h *Handler) SyncUnsyncedWorkspace(ctx context.Context) error {
	if !h.Workspace().Unsynced {
		return nil
	}
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	cur := h.Workspace()
	if !cur.Unsynced {
		return nil
	}
	if err := CheckUnfinishedBackfills(ctx, h.Store, cur.Workspace); err != nil {
		return err
	}
	loaded, err := LoadWorkspace(ctx, h.Store, cur.Workspace, cur.Source, "system", h.Now())
	if err != nil {
		return err
	}
	loaded.Path = cur.Path
	h.SetWorkspace(loaded)
	if h.Log != nil {
		h.Log.Info("workspace agrees with the other instances: synced into the catalog", "source", cur.Source)
	}
	return nil
}

// WorkspaceSynced reports whether the workspace served is the one synced
// into the catalog.
func (h *Handler) WorkspaceSynced() bool { return !h.Workspace().Unsynced }

// APIWorkspaceReload reloads the workspace file (admin).
func (h *Handler) APIWorkspaceReload(c echo.Context) error {
	if err := decodeStrict(c, &struct{}{}, true); err != nil {
		return err // {} or no body: a field was meant for another request
	}
	ws, err := h.ReloadWorkspace(c.Request().Context(), Actor(c))
	if err != nil {
		return err
	}
	out := map[string]any{"source": ws.Source, "assets": len(ws.Assets), "reloaded_at": msTime(h.Now().UnixMilli())}
	if ws.Differs != nil {
		// Served, not synced: say so and what differs.
		out["workspace"] = WorkspaceHealth{Differs: true, Instance: ws.Differs.Instance, Assets: ws.Differs.Assets}
	}
	return c.JSON(http.StatusOK, out)
}

// CheckUnfinishedBackfills refuses a workspace that removes an asset, or
// changes its partition key space, while a backfill of it is unfinished:
// the backfill's chunks are stored as positions in the old key space and
// would select other partitions (or none) in the new one. Both a reload and
// a server start check it.
func CheckUnfinishedBackfills(ctx context.Context, store *db.Store, next *catalog.Workspace) error {
	ids, sigs, err := store.UnfinishedBackfillsOf(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(ids)) {
		change, where := "", ""
		switch n := next.Asset(key); {
		case n == nil:
			change = "removes"
			if next.File != "" {
				where = fmt.Sprintf(" (no longer in %s)", next.File)
			}
		case db.SchemeSignature(n.Scheme) != sigs[key]:
			change = "changes the partitions of"
			if next.File != "" && n.Line > 0 {
				where = fmt.Sprintf(" (%s:%d)", next.File, n.Line)
			}
		default:
			continue
		}
		list := ids[key]
		if len(list) > 5 {
			list = append(list[:5:5], fmt.Sprintf("and %d more", len(ids[key])-5))
		}
		problems = append(problems, fmt.Sprintf("it %s %s%s, which unfinished backfills select (%s)", change, key, where, strings.Join(list, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return Conflict("%s; let those backfills finish or cancel them before changing these assets", strings.Join(problems, "; "))
}
