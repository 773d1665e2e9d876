package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// The backfill engine is event-sourced: every command builds an event
// payload, appends it and applies it to the projections with ApplyEvent in
// the same transaction. Replay (db/replay.go) applies the same payloads to a
// fresh database, so the projections are a pure function of the events.
//
// One file per event: backfill_created.go, backfill_state.go,
// runs_planned.go, attempts_started.go, attempts_finished.go; the prepared
// statements and batch helpers they share are in attempt_stmts.go, and the
// reads of what a run has done in run_checkpoint.go.

// Backfill event types.
const (
	EvBackfillCreated  = "backfill.created"
	EvBackfillState    = "backfill.state"
	EvRunsPlanned      = "runs.planned"
	EvAttemptsStarted  = "attempts.started"
	EvAttemptsFinished = "attempts.finished"
	EvConflict         = "run.conflict"
)

// ConflictRecorded is the payload of run.conflict.
type ConflictRecorded struct {
	Conflict Conflict `json:"conflict"`
}

// Emit appends an event and applies it to the projections. payload is one
// of the event payload types (BackfillCreated, BackfillStateChanged,
// RunsPlanned, AttemptsStarted, AttemptsFinished, ConflictRecorded), a value,
// not a pointer.
func Emit(ctx context.Context, tx *sqlx.Tx, typ, subject, actor string, payload any, idemKey string, now time.Time) error {
	var b []byte
	var err error
	switch p := payload.(type) {
	case BackfillCreated:
		b, err = p.eventJSON() // the same bytes, faster for a million keys
	case AttemptsStarted:
		b, err = p.eventJSON() // the same bytes, faster for every partition
	case AttemptsFinished:
		b, err = p.eventJSON()
	default:
		b, err = json.Marshal(payload)
	}
	if err != nil {
		return err
	}
	var key *string
	if idemKey != "" {
		key = &idemKey
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (type, subject, actor, payload, idempotency_key, at) VALUES (?,?,?,?,?,?)`,
		typ, subject, actor, string(b), key, Millis(now)); err != nil {
		if isUniqueViolation(err) {
			return ErrDuplicateEvent
		}
		return err
	}
	return apply(ctx, tx, typ, payload)
}

// ApplyEvent applies one stored backfill-engine event to the projections
// (replay). Other event types are ignored.
func ApplyEvent(ctx context.Context, tx *sqlx.Tx, typ string, payload []byte) error {
	var p any
	var err error
	switch typ {
	case EvBackfillCreated:
		p, err = decoded[BackfillCreated](payload)
	case EvBackfillState:
		p, err = decoded[BackfillStateChanged](payload)
	case EvRunsPlanned:
		p, err = decoded[RunsPlanned](payload)
	case EvAttemptsStarted:
		p, err = decoded[AttemptsStarted](payload)
	case EvAttemptsFinished:
		p, err = decoded[AttemptsFinished](payload)
	case EvConflict:
		p, err = decoded[ConflictRecorded](payload)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	return apply(ctx, tx, typ, p)
}

// decoded is the JSON payload as a T.
func decoded[T any](payload []byte) (any, error) {
	var v T
	err := json.Unmarshal(payload, &v)
	return v, err
}

func apply(ctx context.Context, tx *sqlx.Tx, typ string, payload any) error {
	switch p := payload.(type) {
	case BackfillCreated:
		return applyCreated(ctx, tx, p)
	case BackfillStateChanged:
		return applyState(ctx, tx, p)
	case RunsPlanned:
		return applyPlanned(ctx, tx, p)
	case AttemptsStarted:
		return applyStarted(ctx, tx, p)
	case AttemptsFinished:
		return applyFinished(ctx, tx, p)
	case ConflictRecorded:
		c := p.Conflict
		_, err := tx.ExecContext(ctx, `INSERT INTO conflicts (run_key, backfill_id, existing_fingerprint, requested_fingerprint, at) VALUES (?,?,?,?,?)`,
			c.RunKey, c.BackfillID, c.ExistingFingerprint, c.RequestedFingerprint, c.At)
		return err
	}
	return fmt.Errorf("event %s: unexpected payload %T", typ, payload)
}
