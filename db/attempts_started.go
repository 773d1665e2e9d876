package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/jmoiron/sqlx"
)

// PartRef is one partition of an attempt. Prev is the partition's stored
// status before the attempt claimed it ("" when it had no row).
type PartRef struct {
	Key string `json:"k" db:"k"`
	Idx int64  `json:"i" db:"i"`
	// InstanceID is left out when the attempt's Asset derives it
	// (AttemptInstanceIDs): the engine's events do not carry an id per
	// partition, about 35 bytes each; events written before they had Asset
	// carry their ids.
	InstanceID string          `json:"id,omitempty" db:"id"`
	Prev       string          `json:"p,omitempty" db:"p"`
	Status     string          `json:"s,omitempty"`
	Metadata   json.RawMessage `json:"m,omitempty"`
	Error      string          `json:"e,omitempty"`
	// Again: an earlier attempt of the same run had materialized this
	// partition (it was tainted or failed since); its new build is not
	// counted again.
	Again bool `json:"a,omitempty"`
	// derived caches the instance id DeriveInstanceIDs computed, for an
	// attempt's parts that the engine keeps from its start to its finish:
	// not part of events.
	derived string
}

// DeriveInstanceIDs computes the instance ids of an attempt's parts once,
// in place and outside their events (PartRef.derived): its start and its
// finish then do not hash every partition again.
func DeriveInstanceIDs(parts []PartRef, runID string, attempt int64, asset string) {
	if asset == "" {
		return
	}
	id := AttemptInstanceIDs(runID, attempt, asset)
	for i := range parts {
		if parts[i].InstanceID == "" {
			parts[i].derived = id(parts[i].Key)
		}
	}
}

// AttemptStart is one attempt in attempts.started.
type AttemptStart struct {
	RunID          string    `json:"run_id"`
	BackfillID     string    `json:"backfill_id"`
	Attempt        int64     `json:"attempt"`
	AssetID        int64     `json:"asset_id"`
	Asset          string    `json:"asset,omitempty"`
	CodeVersion    string    `json:"code_version"`
	Parts          []PartRef `json:"parts"`
	UpstreamFailed []PartRef `json:"upstream_failed,omitempty"`
}

// AttemptInstanceIDs derives the instance ids of an attempt's partitions:
// attempt 1 of run r builds instances of r, a later attempt n instances of
// "r#n" (each attempt is a new instance).
func AttemptInstanceIDs(runID string, attempt int64, asset string) func(partition string) string {
	if attempt > 1 {
		runID = fmt.Sprintf("%s#%d", runID, attempt)
	}
	return InstanceIDs(runID, asset)
}

// partIDs fills in the instance ids an event left out of an attempt's
// parts (see PartRef.InstanceID), one part at a time: a copy of the parts
// with their ids was, at a finish, a sixth of what the engine allocated.
type partIDs struct {
	runID, asset string
	attempt      int64
	id           func(string) string // derived on first need
}

// of is pr with its instance id.
func (p *partIDs) of(pr PartRef) PartRef {
	switch {
	case p.asset == "" || pr.InstanceID != "":
	case pr.derived != "":
		pr.InstanceID = pr.derived
	default:
		if p.id == nil {
			p.id = AttemptInstanceIDs(p.runID, p.attempt, p.asset)
		}
		pr.InstanceID = p.id(pr.Key)
	}
	return pr
}

// AttemptsStarted is the payload of attempts.started.
type AttemptsStarted struct {
	Owner    string         `json:"owner"`
	Attempts []AttemptStart `json:"attempts"`
	At       int64          `json:"at"`
}

func applyStarted(ctx context.Context, tx *sqlx.Tx, p AttemptsStarted) error {
	return applyStartedPlanned(ctx, tx, p, nil)
}

// applyStartedPlanned applies p; the runs of planned were inserted running
// by the same step (applyPlannedStarting) and are not updated again.
func applyStartedPlanned(ctx context.Context, tx *sqlx.Tx, p AttemptsStarted, planned map[string]bool) error {
	st := prepare(tx)
	roll := rollupDelta{}
	perBackfill := map[string][2]int64{}
	// The attempts in statements of batchRows rows, their runs in one
	// statement per attempt number and upstream-failed count (most often
	// one): a step starting eight chunks does not make sixteen round trips.
	attempts := make([]any, 0, 9*len(p.Attempts))
	type runStart struct{ attempt, upFailed int64 }
	starting := map[runStart][]any{}
	var order []runStart
	for _, a := range p.Attempts {
		// The lease of the partitions without a status row is the
		// attempt's own (attempt_leases.go): their row is written once,
		// when the attempt ends.
		var lo, hi *int64
		var lease *string
		if d := newLease(a); d != nil {
			var err error
			if lo, hi, lease, err = d.encode(); err != nil {
				return err
			}
		}
		attempts = append(attempts, a.RunID, a.Attempt, p.Owner, int64(len(a.Parts)), p.At, a.AssetID, lo, hi, lease)
		if planned[a.RunID] {
			continue
		}
		k := runStart{a.Attempt, int64(len(a.UpstreamFailed))}
		if _, ok := starting[k]; !ok {
			order = append(order, k)
		}
		starting[k] = append(starting[k], a.RunID)
	}
	if err := batchExec(ctx, tx, `INSERT INTO attempts (run_id, attempt, state, owner, partitions, started_at, asset_id, lease_lo, lease_hi, lease)
		SELECT column1, column2, 'running', column3, column4, column5, column6, column7, column8, column9 FROM (VALUES `, nil,
		`(?,?,?,?,?,?,?,?,?)`, `) WHERE true`, 9, attempts); err != nil {
		return err
	}
	for _, k := range order {
		ids := starting[k]
		for lo := 0; lo < len(ids); lo += batchRows {
			part := ids[lo:min(lo+batchRows, len(ids))]
			n := padPow2(len(part)) // statement texts of a few lengths, the repeats harmless
			args := append([]any{k.attempt, k.upFailed, p.At, p.At}, part...)
			for range n - len(part) {
				args = append(args, part[len(part)-1])
			}
			if err := execLater(ctx, tx, `UPDATE runs SET state='running', attempts=?, not_before=NULL, upstream_failed=upstream_failed+?,
				started_at=COALESCE(started_at, ?), updated_at=? WHERE id IN (?`+strings.Repeat(",?", n-1)+`)`, args...); err != nil {
				return err
			}
		}
	}
	for _, a := range p.Attempts {
		c := perBackfill[a.BackfillID]
		c[0]++
		c[1] += int64(len(a.UpstreamFailed))
		perBackfill[a.BackfillID] = c
		// A partition with a status row: the row is the lease, it says
		// the attempt's instance, run and code version build it (its
		// instance is recorded when the attempt ends).
		var id func(string) string
		if err := explodeForStart(ctx, tx, a); err != nil {
			return err
		}
		for _, pr := range a.Parts {
			if pr.Prev != "" {
				inst := pr.InstanceID
				if inst == "" {
					inst = pr.derived
				}
				if inst == "" {
					if id == nil {
						id = AttemptInstanceIDs(a.RunID, a.Attempt, a.Asset)
					}
					inst = id(pr.Key)
				}
				if _, err := st.updStatus.ExecContext(ctx, inst, a.RunID, a.CodeVersion, p.At, a.AssetID, pr.Key); err != nil {
					return err
				}
				roll.add(a.AssetID, pr.Idx, pr.Prev, -1)
			}
			roll.add(a.AssetID, pr.Idx, StatusInProgress, 1)
		}
		for _, pr := range a.UpstreamFailed {
			if _, err := st.insFailure.ExecContext(ctx, a.BackfillID, a.AssetID, pr.Key, pr.Idx, "upstream_failed", a.RunID); err != nil {
				return err
			}
		}
	}
	for id, c := range perBackfill {
		if err := execLater(ctx, tx, `UPDATE backfills SET runs_running=runs_running+?, partitions_upstream_failed=partitions_upstream_failed+?, updated_at=?,
			started_at=COALESCE(started_at, ?) WHERE id=?`, c[0], c[1], p.At, p.At, id); err != nil {
			return err
		}
	}
	return roll.apply(ctx, tx)
}

// explodeForStart turns the status ranges holding partitions that attempt a
// starts on with a status (Prev not "") into rows: the row is then the
// lease (status_ranges.go).
func explodeForStart(ctx context.Context, tx *sqlx.Tx, a AttemptStart) error {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, pr := range a.Parts {
		if pr.Prev == StatusMaterialized {
			lo, hi = min(lo, pr.Idx), max(hi, pr.Idx)
		}
	}
	if lo > hi {
		return nil
	}
	return explodeStatusRanges(ctx, tx, a.AssetID, lo, hi)
}
