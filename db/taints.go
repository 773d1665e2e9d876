package db

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// Taint marks a materialized partition's canonical instance as invalid. It
// stays visible, becomes stale with reason TAINTED, and the next successful
// build supersedes it. ErrNotFound when the partition was never
// materialized.
func (s *Store) Taint(ctx context.Context, assetID int64, assetKey, key, reason, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := explodeStatusRangesByKey(ctx, tx, assetID, key); err != nil {
			return err
		}
		var st PartitionStatus
		err := tx.GetContext(ctx, &st, `SELECT * FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, key)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !st.Materialized) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		st.fill()
		if _, err := tx.ExecContext(ctx, `UPDATE partition_status SET tainted_at=?, taint_reason=?, updated_at=? WHERE asset_id=? AND partition_key=?`,
			Millis(now), reason, Millis(now), assetID, key); err != nil {
			return err
		}
		if err := clearOpenTaints(ctx, tx, assetID, key, actor, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO partition_taints (asset_id, partition_key, instance_id, reason, actor, tainted_at) VALUES (?,?,?,?,?,?)`,
			assetID, key, st.CanonicalInstanceID, reason, actor, Millis(now)); err != nil {
			return err
		}
		_, err = AppendEvent(ctx, tx, "partition.tainted", "asset:"+assetKey, actor,
			map[string]any{"partition": key, "reason": reason, "instance_id": st.CanonicalInstanceID}, "", now)
		return err
	})
}

// ClearTaint removes a partition's taint; ErrNotFound when it is not tainted.
func (s *Store) ClearTaint(ctx context.Context, assetID int64, assetKey, key, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE partition_status SET tainted_at=NULL, taint_reason=NULL, updated_at=? WHERE asset_id=? AND partition_key=? AND tainted_at IS NOT NULL`,
			Millis(now), assetID, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if err := clearOpenTaints(ctx, tx, assetID, key, actor, now); err != nil {
			return err
		}
		_, err = AppendEvent(ctx, tx, "partition.taint_cleared", "asset:"+assetKey, actor, map[string]any{"partition": key}, "", now)
		return err
	})
}

// clearOpenTaints marks the partition's staleness block for recomputing
// and records its open taints cleared by actor at now (a new taint, or the
// taint cleared, replaces them).
func clearOpenTaints(ctx context.Context, tx *sqlx.Tx, assetID int64, key, actor string, now time.Time) error {
	if err := markStaleBlockOf(ctx, tx, assetID, key); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE partition_taints SET cleared_at=?, cleared_by=? WHERE asset_id=? AND partition_key=? AND cleared_at IS NULL`,
		Millis(now), actor, assetID, key)
	return err
}

// Taint is one taint of a partition instance.
type Taint struct {
	ID         int64   `db:"id" json:"-"`
	AssetID    int64   `db:"asset_id" json:"-"`
	Partition  string  `db:"partition_key" json:"partition"`
	InstanceID *string `db:"instance_id" json:"instance_id"`
	Reason     string  `db:"reason" json:"reason"`
	Actor      string  `db:"actor" json:"actor"`
	TaintedAt  int64   `db:"tainted_at" json:"tainted_at"`
	ClearedAt  *int64  `db:"cleared_at" json:"cleared_at,omitempty"`
	ClearedBy  *string `db:"cleared_by" json:"cleared_by,omitempty"`
}

// Taints lists a partition's taints, newest first.
func (s *Store) Taints(ctx context.Context, assetID int64, key string) ([]Taint, error) {
	return selectAll[Taint](ctx, s.r, `SELECT * FROM partition_taints WHERE asset_id=? AND partition_key=? ORDER BY tainted_at DESC, id DESC`, assetID, key)
}

// HistoryAt answers "what was this partition's instance at time at": the
// canonical instance then (the newest successful build finished at or before
// at), the newest attempt started by then, and the taint in force.
type HistoryAt struct {
	At          int64     `json:"at"`
	Canonical   *Instance `json:"canonical"`
	LastAttempt *Instance `json:"last_attempt"`
	Taint       *Taint    `json:"taint"`
}

// PartitionHistoryAt returns the partition's state at time at.
func (s *Store) PartitionHistoryAt(ctx context.Context, assetID int64, key string, at time.Time) (HistoryAt, error) {
	ms := Millis(at)
	h := HistoryAt{At: ms}
	// The instance rows and the status ranges in one snapshot: a range
	// turned into rows between two reads would be in neither.
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var c Instance
		err := q.GetContext(ctx, &c, `SELECT * FROM partition_instances WHERE asset_id=? AND partition_key=? AND status=? AND COALESCE(finished_at, created_at) <= ?
			ORDER BY COALESCE(finished_at, created_at) DESC, created_at DESC LIMIT 1`, assetID, key, StatusMaterialized, ms)
		switch {
		case err == nil:
			h.Canonical = &c
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if s.betweenReads != nil {
			s.betweenReads()
		}
		// The instance a status range holds, materialized, is the newest
		// one of its partition when it finished by then.
		rs, err := rangesByKey(ctx, q, assetID, []string{key})
		if err != nil {
			return err
		}
		if r, ok := rs[key]; ok && r.finished <= ms {
			in := r.instance(assetID)
			if h.Canonical == nil || *in.FinishedAt > coalesceAt(h.Canonical) || *in.FinishedAt == coalesceAt(h.Canonical) && in.CreatedAt > h.Canonical.CreatedAt {
				h.Canonical = &in
			}
		}
		return nil
	})
	if err != nil {
		return h, err
	}
	var l Instance
	err = s.snapshot(ctx, func(c *sqlx.Conn) error {
		err := c.GetContext(ctx, &l, `SELECT * FROM (SELECT `+instanceCols+` FROM partition_instances WHERE asset_id=? AND partition_key=?
			UNION ALL `+inProgressInstances(`ps.asset_id=? AND ps.partition_key=?`)+`) AS i WHERE COALESCE(started_at, created_at) <= ?
			ORDER BY COALESCE(started_at, created_at) DESC, created_at DESC, COALESCE(finished_at, created_at) DESC LIMIT 1`, assetID, key, assetID, key, ms)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// The instance in progress of a partition leased without a row,
		// or the one a status range holds.
		ls, lerr := standingByKey(ctx, c, assetID, []string{key})
		if lerr != nil {
			return lerr
		}
		if le, ok := ls[key]; ok && le.Started <= ms {
			in := le.instance(assetID)
			if errors.Is(err, sql.ErrNoRows) || laterAttempt(in, l) {
				l, err = in, nil
			}
		}
		return err
	})
	switch {
	case err == nil:
		if l.FinishedAt != nil && *l.FinishedAt > ms {
			l.Status = StatusInProgress // it had not finished yet at that time
			l.FinishedAt = nil
		}
		h.LastAttempt = &l
	case !errors.Is(err, sql.ErrNoRows):
		return h, err
	}
	if h.Canonical != nil {
		var t Taint
		err = s.r.GetContext(ctx, &t, `SELECT * FROM partition_taints WHERE asset_id=? AND partition_key=? AND instance_id=? AND tainted_at <= ?
			AND (cleared_at IS NULL OR cleared_at > ?) ORDER BY tainted_at DESC LIMIT 1`, assetID, key, h.Canonical.ID, ms, ms)
		switch {
		case err == nil:
			h.Taint = &t
		case !errors.Is(err, sql.ErrNoRows):
			return h, err
		}
	}
	return h, nil
}

// laterAttempt says whether a started after b in PartitionHistoryAt's order
// (start, creation, finish).
func laterAttempt(a, b Instance) bool {
	at := func(i Instance) [3]int64 {
		st, fin := i.CreatedAt, i.CreatedAt
		if i.StartedAt != nil {
			st = *i.StartedAt
		}
		if i.FinishedAt != nil {
			fin = *i.FinishedAt
		}
		return [3]int64{st, i.CreatedAt, fin}
	}
	x, y := at(a), at(b)
	for k := range x {
		if x[k] != y[k] {
			return x[k] > y[k]
		}
	}
	return false
}

// coalesceAt is COALESCE(finished_at, created_at) of an instance.
func coalesceAt(i *Instance) int64 {
	if i.FinishedAt != nil {
		return *i.FinishedAt
	}
	return i.CreatedAt
}
