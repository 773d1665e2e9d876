package handlers

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
)

// MaxPageLimit is the largest page any list endpoint returns.
const MaxPageLimit = 1000

// PartitionJSON is one partition in API answers.
type PartitionJSON struct {
	Partition string `json:"partition"`
	Index     int64  `json:"index"`
	Status    string `json:"status"`
	// Health is the word the health bars count the partition under
	// (catalog.Health); a partition whose last attempt failed over data
	// still there has status failed but health fresh or stale, and
	// LastAttemptFailed.
	Health              string           `json:"health"`
	LastAttemptFailed   bool             `json:"last_attempt_failed,omitempty"`
	LastMaterialization *OutcomeJSON     `json:"last_materialization"`
	LastAttempt         *OutcomeJSON     `json:"last_attempt"`
	Taint               *json.RawMessage `json:"taint,omitempty"`
}

// OutcomeJSON is a materialization or an attempt.
type OutcomeJSON struct {
	At          string          `json:"at"`
	RunID       string          `json:"run_id"`
	InstanceID  string          `json:"instance_id"`
	Status      string          `json:"status,omitempty"`
	CodeVersion string          `json:"code_version,omitempty"`
	Error       string          `json:"error,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

func partitionJSON(key string, r *db.PartitionStatus, idx int64) PartitionJSON {
	p := PartitionJSON{Partition: key, Index: idx, Status: db.StatusMissing}
	if r == nil {
		return p
	}
	p.Status = r.Status
	if r.Materialized && r.LastMatAt != nil {
		o := &OutcomeJSON{At: db.FromMillis(*r.LastMatAt).Format(timeFormat), RunID: deref(r.LastMatRunID),
			InstanceID: deref(r.LastMatInstanceID), CodeVersion: deref(r.LastMatCodeVersion)}
		if m := deref(r.LastMatMetadata); m != "" {
			o.Metadata = json.RawMessage(m)
		}
		p.LastMaterialization = o
	}
	if r.LastAttemptAt != nil {
		p.LastAttempt = &OutcomeJSON{At: db.FromMillis(*r.LastAttemptAt).Format(timeFormat), RunID: deref(r.LastAttemptRunID),
			InstanceID: deref(r.LastAttemptInstanceID), Status: deref(r.LastAttemptStatus), Error: deref(r.LastAttemptError)}
	}
	return p
}

// APIPartitions lists an asset's partitions in order, optionally only those of
// some statuses (status=failed,missing), with cursor pagination.
func (h *Handler) APIPartitions(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	kind := "p" + strconv.FormatInt(a.ID, 10) // this asset's list only
	after, limit, err := listPage(c, parseLimit, -1, cursorOf(kind))
	if err != nil {
		return err
	}
	var statuses []string
	if s := c.QueryParam("status"); s != "" {
		for _, st := range strings.Split(s, ",") {
			if !slices.Contains(db.Statuses, st) {
				return BadRequest("status", "unknown status %q; use materialized, failed, in_progress or missing (comma-separated)", st)
			}
			statuses = append(statuses, st)
		}
	}
	n := a.Space.Len()
	out := make([]PartitionJSON, 0, limit)
	next := ""
	wantMissing := len(statuses) == 0 || slices.Contains(statuses, db.StatusMissing)
	stored := slices.DeleteFunc(slices.Clone(statuses), func(s string) bool { return s == db.StatusMissing })
	// Walk stored rows and, when missing is wanted, the holes between them
	// (read in one snapshot: a partition leased meanwhile is in one).
	rows, holes, err := h.Store.PartitionsPage(ctx, a.ID, after, n, stored, len(statuses) == 0 || len(stored) > 0, wantMissing, limit+1)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for len(out) < limit && (i < len(rows) || j < len(holes)) {
		if j >= len(holes) || (i < len(rows) && rows[i].Idx < holes[j]) {
			if rows[i].Idx >= 0 && rows[i].Idx < n {
				out = append(out, partitionJSON(rows[i].Key, &rows[i], rows[i].Idx))
			}
			i++
		} else {
			out = append(out, partitionJSON(a.Space.Key(holes[j]), nil, holes[j]))
			j++
		}
	}
	if len(out) == limit && (i < len(rows) || j < len(holes)) {
		next = encodeCursor(kind, out[len(out)-1].Index)
	}
	if len(out) > 0 {
		sc, f, err := h.assetFacts(ctx, a.Def)
		if err != nil {
			return err
		}
		for k := range out {
			hl, _, lastFailed := f.HealthAt(out[k].Index, sc.now)
			out[k].Health, out[k].LastAttemptFailed = string(hl), lastFailed
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "total_partitions": n, "partitions": out, "next_cursor": next})
}
