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
	ectx := ctx
	if key == nil {
		// Nothing to tell apart (a duplicate idempotency key): it may be
		// queued on PostgreSQL (execLater).
		ectx = later(ctx)
	}
	if _, err := tx.ExecContext(ectx, `INSERT INTO events (type, subject, actor, payload, idempotency_key, at) VALUES (?,?,?,?,?,?)`,
		typ, subject, actor, string(b), key, Millis(now)); err != nil {
		if isUniqueViolation(err) {
			return ErrDuplicateEvent
		}
		return err
	}
	return apply(ctx, tx, typ, payload)
}

// EmitPlannedAndStarted appends a step's runs.planned events (one per
// backfill) and then its attempts.started events, in one statement, and
// applies them. The projections are those of emitting each in turn (replay
// applies them so), written with fewer statements: a run planned and
// started in the step is inserted running, not inserted queued and updated.
func EmitPlannedAndStarted(ctx context.Context, tx *sqlx.Tx, actor string, planned []RunsPlanned, started []AttemptsStarted, now time.Time) error {
	args := make([]any, 0, 6*(len(planned)+len(started)))
	at := Millis(now)
	for _, p := range planned {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		args = append(args, EvRunsPlanned, "backfill:"+p.BackfillID, actor, string(b), nil, at)
	}
	for _, p := range started {
		b, err := p.eventJSON()
		if err != nil {
			return err
		}
		subject := ""
		if len(p.Attempts) > 0 {
			subject = "backfill:" + p.Attempts[0].BackfillID
		}
		args = append(args, EvAttemptsStarted, subject, actor, string(b), nil, at)
	}
	if len(args) == 0 {
		return nil
	}
	if err := batchExec(ctx, tx, `INSERT INTO events (type, subject, actor, payload, idempotency_key, at) VALUES `, nil, `(?,?,?,?,?,?)`, ``, 6, args); err != nil {
		return err
	}
	starting := map[string]runStarting{}
	for _, p := range started {
		for _, a := range p.Attempts {
			starting[a.RunID] = runStarting{a.Attempt, int64(len(a.UpstreamFailed)), p.At}
		}
	}
	plannedRuns := map[string]bool{}
	for _, p := range planned {
		if err := applyPlannedStarting(ctx, tx, p, starting); err != nil {
			return err
		}
		for _, r := range p.Runs {
			plannedRuns[r.ID] = true
		}
	}
	for _, p := range started {
		if err := applyStartedPlanned(ctx, tx, p, plannedRuns); err != nil {
			return err
		}
	}
	return nil
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
