package handlers

import (
	"encoding/base64"
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
	Partition           string           `json:"partition"`
	Index               int64            `json:"index"`
	Status              string           `json:"status"`
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

// parseLimit reads ?limit= (default 100, 1..MaxPageLimit).
func parseLimit(c echo.Context) (int, error) {
	s := c.QueryParam("limit")
	if s == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxPageLimit {
		return 0, BadRequest("limit", "limit must be a whole number from 1 to %d, got %q", MaxPageLimit, s)
	}
	return n, nil
}

// encodeCursor and decodeCursor make opaque cursors from a position.
func encodeCursor(kind string, pos int64) string {
	return encodeCursorParts(kind, strconv.FormatInt(pos, 10))
}

func decodeCursor(s, kind string) (int64, error) {
	parts, err := decodeCursorParts(s, kind, 1)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || n < 0 {
		return 0, badCursor(s)
	}
	return n, nil
}

// encodeCursorParts makes an opaque cursor of a position with several parts
// (only the last may contain ":").
func encodeCursorParts(kind string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strings.Join(parts, ":")))
}

// decodeCursorParts reads a cursor of encodeCursorParts with n parts.
func decodeCursorParts(s, kind string, n int) ([]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badCursor(s)
	}
	k, v, ok := strings.Cut(string(b), ":")
	if !ok || k != kind {
		return nil, badCursor(s)
	}
	parts := strings.SplitN(v, ":", n)
	if len(parts) != n {
		return nil, badCursor(s)
	}
	return parts, nil
}

// badCursor is the 400 of a cursor the list did not give out.
func badCursor(s string) *UserError {
	return BadRequest("cursor", "cursor %q is not one this list gave out; pass the next_cursor of the previous page, or leave cursor out to start at the first page", s)
}

// decodeListCursor reads a cursor of a list that gave out plain integers
// before it gave out opaque cursors (the backfills and the chunks lists): a
// stored integer of at least legacyMin still works; anything else must be
// one of kind's opaque cursors.
func decodeListCursor(s, kind string, legacyMin int64) (int64, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" { // never an opaque cursor: "kind:" encodes to letters
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= legacyMin {
			return n, nil
		}
	}
	return decodeCursor(s, kind)
}

// APIPartitions lists an asset's partitions in order, optionally only those of
// some statuses (status=failed,missing), with cursor pagination.
func (h *Handler) APIPartitions(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.asset(ctx, pathParam(c, "key"))
	if err != nil {
		return err
	}
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after := int64(-1)
	if cur := c.QueryParam("cursor"); cur != "" {
		if after, err = decodeCursor(cur, "p"); err != nil {
			return err
		}
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
	// Walk stored rows and, when missing is wanted, the holes between them.
	var rows []db.PartitionStatus
	if len(statuses) == 0 || len(stored) > 0 {
		if rows, err = h.Store.PartitionsAfter(ctx, a.ID, after, stored, limit+1); err != nil {
			return err
		}
	}
	var holes []int64
	if wantMissing {
		if holes, err = h.Store.MissingAfter(ctx, a.ID, after, n, limit+1); err != nil {
			return err
		}
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
		next = encodeCursor("p", out[len(out)-1].Index)
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "total_partitions": n, "partitions": out, "next_cursor": next})
}
