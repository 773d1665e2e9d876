package db

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// The backfill engine is event-sourced: every command builds an event
// payload, appends it and applies it to the projections with ApplyEvent in
// the same transaction. Replay (db/replay.go) applies the same payloads to a
// fresh database, so the projections are a pure function of the events.

// Backfill event types.
const (
	EvBackfillCreated  = "backfill.created"
	EvBackfillState    = "backfill.state"
	EvRunsPlanned      = "runs.planned"
	EvAttemptsStarted  = "attempts.started"
	EvAttemptsFinished = "attempts.finished"
	EvConflict         = "run.conflict"
)

// BackfillCreated is the payload of backfill.created.
type BackfillCreated struct {
	Backfill Backfill             `json:"backfill"`
	Segments []Segment            `json:"segments"`
	Ranges   map[int64][]SelRange `json:"ranges,omitempty"`
	Keys     []string             `json:"keys,omitempty"`
}

// BackfillStateChanged is the payload of backfill.state.
type BackfillStateChanged struct {
	ID        string `json:"id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Version   int64  `json:"state_version"`
	Terminate bool   `json:"terminate,omitempty"`
	Reason    string `json:"reason,omitempty"`
	At        int64  `json:"at"`
	// Failures: on CANCELED, the partitions that runs waiting for a retry
	// had failed; those runs never retry, so the partitions count as failed.
	Failures []RunFailures `json:"failures,omitempty"`
}

// RunFailures are partitions of one run recorded as finally failed.
type RunFailures struct {
	RunID   string    `json:"run_id"`
	AssetID int64     `json:"asset_id"`
	Parts   []PartRef `json:"parts"`
}

// RunsPlanned is the payload of runs.planned: new chunk runs of one backfill.
type RunsPlanned struct {
	BackfillID string `json:"backfill_id"`
	NextChunk  int64  `json:"next_chunk"`
	Runs       []Run  `json:"runs"`
	At         int64  `json:"at"`
}

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

// withIDs returns parts with their instance ids, deriving those an event
// left out (see PartRef.InstanceID). parts itself is not changed.
func withIDs(parts []PartRef, runID string, attempt int64, asset string) []PartRef {
	if asset == "" {
		return parts
	}
	var out []PartRef
	var id func(string) string
	for i, pr := range parts {
		if pr.InstanceID != "" {
			continue
		}
		if out == nil {
			out = slices.Clone(parts)
		}
		if pr.derived != "" {
			out[i].InstanceID = pr.derived
			continue
		}
		if id == nil {
			id = AttemptInstanceIDs(runID, attempt, asset)
		}
		out[i].InstanceID = id(pr.Key)
	}
	if out == nil {
		return parts
	}
	return out
}

// AttemptsStarted is the payload of attempts.started.
type AttemptsStarted struct {
	Owner    string         `json:"owner"`
	Attempts []AttemptStart `json:"attempts"`
	At       int64          `json:"at"`
}

// AttemptEnd is one finished attempt in attempts.finished. RunState is the
// run's state afterwards: queued (retry at NotBefore) or final.
type AttemptEnd struct {
	RunID      string    `json:"run_id"`
	BackfillID string    `json:"backfill_id"`
	Attempt    int64     `json:"attempt"`
	AssetID    int64     `json:"asset_id"`
	Asset      string    `json:"asset,omitempty"`
	State      string    `json:"state"`
	Error      string    `json:"error,omitempty"`
	Parts      []PartRef `json:"parts"`
	RunState   string    `json:"run_state"`
	NotBefore  int64     `json:"not_before,omitempty"`
	// Failures are the partitions recorded as finally failed when the run
	// ends failed (reason failed).
	Failures    []PartRef `json:"failures,omitempty"`
	CodeVersion string    `json:"code_version"`
	// Started is when the attempt started (for instances' started_at).
	Started int64 `json:"started"`
	// Finished, when set, is when the attempt ended if before the event: an
	// interrupted attempt ended when its server was last seen.
	Finished int64 `json:"finished,omitempty"`
}

// AttemptsFinished is the payload of attempts.finished.
type AttemptsFinished struct {
	Attempts []AttemptEnd `json:"attempts"`
	At       int64        `json:"at"`
}

// ConflictRecorded is the payload of run.conflict.
type ConflictRecorded struct {
	Conflict Conflict `json:"conflict"`
}

// Emit appends an event and applies it to the projections. payload is one
// of the payload types above (a value, not a pointer).
func Emit(ctx context.Context, tx *sqlx.Tx, typ, subject, actor string, payload any, idemKey string, now time.Time) error {
	b, err := json.Marshal(payload)
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
	switch typ {
	case EvBackfillCreated:
		var v BackfillCreated
		err := json.Unmarshal(payload, &v)
		if err != nil {
			return err
		}
		p = v
	case EvBackfillState:
		var v BackfillStateChanged
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		p = v
	case EvRunsPlanned:
		var v RunsPlanned
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		p = v
	case EvAttemptsStarted:
		var v AttemptsStarted
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		p = v
	case EvAttemptsFinished:
		var v AttemptsFinished
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		p = v
	case EvConflict:
		var v ConflictRecorded
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		p = v
	default:
		return nil
	}
	return apply(ctx, tx, typ, p)
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

func applyCreated(ctx context.Context, tx *sqlx.Tx, p BackfillCreated) error {
	b := p.Backfill
	if _, err := tx.NamedExecContext(ctx, `INSERT INTO backfills (id, seq, title, state, state_version, assets, selector, chunk_size, max_concurrent_runs, priority,
		total_partitions, total_chunks, next_chunk, terminate, parent_backfill_id, retry_request_id, request_key, request_hash, created_by, created_at, updated_at)
		VALUES (:id, (SELECT COALESCE(MAX(seq),0)+1 FROM backfills), :title, :state, :state_version, :assets, :selector, :chunk_size, :max_concurrent_runs, :priority,
		:total_partitions, :total_chunks, 0, 0, :parent_backfill_id, :retry_request_id, :request_key, :request_hash, :created_by, :created_at, :updated_at)`, b); err != nil {
		return err
	}
	for _, s := range p.Segments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_segments (backfill_id, pos, asset, asset_id, partitions, first_chunk, chunks, explicit) VALUES (?,?,?,?,?,?,?,?)`,
			b.ID, s.Pos, s.Asset, s.AssetID, s.Partitions, s.FirstChunk, s.Chunks, s.Explicit); err != nil {
			return err
		}
		for _, r := range p.Ranges[s.Pos] {
			if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_ranges (backfill_id, pos, start, lo, hi) VALUES (?,?,?,?,?)`, b.ID, s.Pos, r.Start, r.Lo, r.Hi); err != nil {
				return err
			}
		}
	}
	args := make([]any, 0, 3*min(len(p.Keys), 100_000))
	for i, k := range p.Keys {
		args = append(args, b.ID, i, k)
		if len(args) == cap(args) || i == len(p.Keys)-1 {
			if err := batchExec(ctx, tx, `INSERT INTO backfill_keys (backfill_id, n, key) VALUES `, nil, `(?,?,?)`, ``, 3, args); err != nil {
				return err
			}
			args = args[:0]
		}
	}
	return nil
}

func applyState(ctx context.Context, tx *sqlx.Tx, p BackfillStateChanged) error {
	res, err := tx.ExecContext(ctx, `UPDATE backfills SET state=?, state_version=?, updated_at=?,
		terminate = MAX(terminate, ?),
		started_at = CASE WHEN ?='RUNNING' THEN COALESCE(started_at, ?) ELSE started_at END,
		finished_at = CASE WHEN ? IN ('CANCELED','SUCCEEDED','FAILED') THEN ? ELSE finished_at END
		WHERE id=? AND state=?`, p.To, p.Version, p.At, p.Terminate, p.To, p.At, p.To, p.At, p.ID, p.From)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("backfill %s: transition %s -> %s does not apply", p.ID, p.From, p.To)
	}
	if p.To == BackfillCanceled || p.To == BackfillCanceling && p.From == BackfillPending {
		var failed int64
		for _, rf := range p.Failures {
			for _, pr := range rf.Parts {
				if _, err := tx.ExecContext(ctx, `INSERT INTO backfill_failures (backfill_id, asset_id, partition_key, idx, reason, run_id) VALUES (?,?,?,?,'failed',?)
					ON CONFLICT DO UPDATE SET reason=excluded.reason, run_id=excluded.run_id`, p.ID, rf.AssetID, pr.Key, pr.Idx, rf.RunID); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET failed=? WHERE id=?`, len(rf.Parts), rf.RunID); err != nil {
				return err
			}
			failed += int64(len(rf.Parts))
		}
		if failed > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE backfills SET partitions_failed=partitions_failed+? WHERE id=?`, failed, p.ID); err != nil {
				return err
			}
		}
		// Queued runs that never started are canceled with the backfill.
		return cancelQueued(ctx, tx, p.ID, p.At)
	}
	return nil
}

func cancelQueued(ctx context.Context, tx *sqlx.Tx, backfillID string, at int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET state='canceled', updated_at=?, finished_at=? WHERE backfill_id=? AND state='queued'`, at, at, backfillID)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		_, err = tx.ExecContext(ctx, `UPDATE backfills SET runs_active=runs_active-?, runs_canceled=runs_canceled+? WHERE id=?`, n, n, backfillID)
	}
	return err
}

func applyPlanned(ctx context.Context, tx *sqlx.Tx, p RunsPlanned) error {
	st, err := tx.PrepareNamedContext(ctx, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key,
		state, attempts, max_attempts, created_at, updated_at)
		VALUES (:id, :run_key, :backfill_id, :chunk, :seg, :asset, :asset_id, :fingerprint, :partitions, :first_key, :last_key, 'queued', 0, :max_attempts, :created_at, :updated_at)
		ON CONFLICT (run_key) DO NOTHING`)
	if err != nil {
		return err
	}
	defer st.Close()
	var n int64
	for _, r := range p.Runs {
		res, err := st.ExecContext(ctx, r)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n += k
	}
	_, err = tx.ExecContext(ctx, `UPDATE backfills SET next_chunk=MAX(next_chunk, ?), runs_active=runs_active+?, updated_at=? WHERE id=?`, p.NextChunk, n, p.At, p.BackfillID)
	return err
}

type stmts struct {
	updStatus, delStatus, finInst, matStatus, failStatus, insFailure *sqlx.Stmt
}

func prepare(ctx context.Context, tx *sqlx.Tx) (*stmts, error) {
	var s stmts
	var err error
	p := func(dst **sqlx.Stmt, q string) {
		if err == nil {
			*dst, err = tx.PreparexContext(ctx, q)
		}
	}
	p(&s.updStatus, `UPDATE partition_status SET status='in_progress', lease_instance_id=?, lease_run_id=?, lease_code_version=?, updated_at=?
		WHERE asset_id=? AND partition_key=?`)
	p(&s.delStatus, `DELETE FROM partition_status WHERE asset_id=? AND partition_key=?`)
	// An attempt's instances are recorded when it ends (instances recorded
	// in progress by earlier versions are completed in place).
	p(&s.finInst, `INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, created_at)
		VALUES (?1,?2,?3,?4,?5,?6,?7,?8,'backfill',?9,?10,?9)
		ON CONFLICT (asset_id, partition_key, id) DO UPDATE SET status=excluded.status, metadata=excluded.metadata, error=excluded.error, finished_at=excluded.finished_at`)
	// A materialized last attempt is the last materialization: its ids are
	// stored once (PartitionStatus.fill).
	p(&s.matStatus, `UPDATE partition_status SET status='materialized', materialized=1,
		last_mat_instance_id=?1, last_mat_run_id=?2, last_mat_at=?3, last_mat_code_version=?4, last_mat_metadata=?5,
		last_attempt_instance_id=NULL, last_attempt_run_id=NULL, last_attempt_at=?3, last_attempt_status='materialized', last_attempt_error=NULL,
		tainted_at=NULL, taint_reason=NULL, lease_instance_id=NULL, lease_run_id=NULL, lease_code_version=NULL, updated_at=?3
		WHERE asset_id=?6 AND partition_key=?7 AND status=?8`)
	p(&s.failStatus, `UPDATE partition_status SET status='failed', last_attempt_instance_id=?1, last_attempt_run_id=?2, last_attempt_at=?3,
		last_attempt_status='failed', last_attempt_error=?4, lease_instance_id=NULL, lease_run_id=NULL, lease_code_version=NULL, updated_at=?3
		WHERE asset_id=?5 AND partition_key=?6 AND status=?7`)
	p(&s.insFailure, `INSERT INTO backfill_failures (backfill_id, asset_id, partition_key, idx, reason, run_id) VALUES (?,?,?,?,?,?)
		ON CONFLICT DO UPDATE SET reason=excluded.reason, run_id=excluded.run_id`)
	if err != nil {
		s.close()
		return nil, err
	}
	return &s, nil
}

func (s *stmts) close() {
	for _, st := range []*sqlx.Stmt{s.updStatus, s.delStatus, s.finInst, s.matStatus, s.failStatus, s.insFailure} {
		if st != nil {
			st.Close()
		}
	}
}

func applyStarted(ctx context.Context, tx *sqlx.Tx, p AttemptsStarted) error {
	st, err := prepare(ctx, tx)
	if err != nil {
		return err
	}
	defer st.close()
	roll := rollupDelta{}
	perBackfill := map[string][2]int64{}
	// New status rows, by what they have in common (bound once a statement).
	type newsKey struct {
		asset int64
		code  string
	}
	news := map[newsKey][]any{}
	var newsOrder []newsKey
	for _, a := range p.Attempts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO attempts (run_id, attempt, state, owner, partitions, started_at) VALUES (?,?,'running',?,?,?)`,
			a.RunID, a.Attempt, p.Owner, len(a.Parts), p.At); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET state='running', attempts=?, not_before=NULL, upstream_failed=upstream_failed+?,
			started_at=COALESCE(started_at, ?), updated_at=? WHERE id=?`, a.Attempt, len(a.UpstreamFailed), p.At, p.At, a.RunID); err != nil {
			return err
		}
		c := perBackfill[a.BackfillID]
		c[0]++
		c[1] += int64(len(a.UpstreamFailed))
		perBackfill[a.BackfillID] = c
		// The lease: the status row of each partition says the attempt's
		// instance, run and code version build it (its instance is recorded
		// when the attempt ends).
		nk := newsKey{a.AssetID, a.CodeVersion}
		for _, pr := range withIDs(a.Parts, a.RunID, a.Attempt, a.Asset) {
			if pr.Prev == "" {
				if _, ok := news[nk]; !ok {
					newsOrder = append(newsOrder, nk)
				}
				news[nk] = append(news[nk], pr.Key, pr.Idx, pr.InstanceID, a.RunID)
			} else {
				if _, err := st.updStatus.ExecContext(ctx, pr.InstanceID, a.RunID, a.CodeVersion, p.At, a.AssetID, pr.Key); err != nil {
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
	// New rows of all attempts in statements of batchRows, what they share
	// bound once.
	for _, k := range newsOrder {
		if err := batchExec(ctx, tx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, lease_instance_id, lease_run_id, lease_code_version, updated_at)
			SELECT ?, column1, column2, 'in_progress', 0, column3, column4, ?, ? FROM (VALUES `, []any{k.asset, k.code, p.At},
			`(?,?,?,?)`, `)`, 4, news[k]); err != nil {
			return err
		}
	}
	for id, c := range perBackfill {
		if _, err := tx.ExecContext(ctx, `UPDATE backfills SET runs_running=runs_running+?, partitions_upstream_failed=partitions_upstream_failed+?, updated_at=?,
			started_at=COALESCE(started_at, ?) WHERE id=?`, c[0], c[1], p.At, p.At, id); err != nil {
			return err
		}
	}
	return roll.apply(ctx, tx)
}

func applyFinished(ctx context.Context, tx *sqlx.Tx, p AttemptsFinished) error {
	st, err := prepare(ctx, tx)
	if err != nil {
		return err
	}
	defer st.close()
	roll := rollupDelta{}
	type counts struct{ running, active, succ, failed, canceled, mat, pfailed int64 }
	perBackfill := map[string]*counts{}
	lastMat := map[int64]int64{}
	lastAttempt := lastAttempts{}
	var plain []plainMat
	for _, a := range p.Attempts {
		c := perBackfill[a.BackfillID]
		if c == nil {
			c = &counts{}
			perBackfill[a.BackfillID] = c
		}
		ended := p.At
		if a.Finished > 0 && a.Finished < ended {
			ended = a.Finished
		}
		var built, broke int64 // this attempt's outcomes, for the throughput chart
		for _, pr := range a.Parts {
			switch pr.Status {
			case StatusMaterialized:
				built++
			case StatusFailed:
				broke++
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state=?, finished_at=?, error=?, materialized=?, failed=? WHERE run_id=? AND attempt=?`,
			a.State, ended, nullIfEmpty(a.Error), built, broke, a.RunID, a.Attempt); err != nil {
			return err
		}
		started := a.Started
		if started == 0 {
			// Events written before they carried it: the attempt row has it.
			if err := tx.GetContext(ctx, &started, `SELECT started_at FROM attempts WHERE run_id=? AND attempt=?`, a.RunID, a.Attempt); err != nil {
				return err
			}
		}
		var mat, failed int64
		for _, pr := range withIDs(a.Parts, a.RunID, a.Attempt, a.Asset) {
			var meta *string
			if len(pr.Metadata) > 0 && string(pr.Metadata) != "null" {
				s := string(pr.Metadata)
				meta = &s
			}
			if pr.Status == StatusMaterialized && meta == nil && pr.Error == "" {
				// The common case, written in batches below.
				plain = append(plain, plainMat{asset: a.AssetID, code: a.CodeVersion, run: a.RunID, started: started, part: pr})
				lastMat[a.AssetID] = p.At
				lastAttempt.add(a.AssetID, p.At, StatusMaterialized)
				if !pr.Again {
					mat++
				}
				continue
			}
			if _, err := st.finInst.ExecContext(ctx, pr.InstanceID, a.AssetID, pr.Key, a.RunID, pr.Status, a.CodeVersion, meta, nullIfEmpty(pr.Error), started, p.At); err != nil {
				return err
			}
			switch pr.Status {
			case StatusMaterialized:
				if !pr.Again {
					mat++
				}
				lastAttempt.add(a.AssetID, p.At, StatusMaterialized)
				prev, err := updateFromLease(ctx, tx, st.matStatus, a.AssetID, pr.Key, pr.InstanceID, a.RunID, p.At, a.CodeVersion, meta, a.AssetID, pr.Key)
				if err != nil {
					return err
				}
				if prev != "" {
					roll.add(a.AssetID, pr.Idx, prev, -1)
					roll.add(a.AssetID, pr.Idx, StatusMaterialized, 1)
				}
				lastMat[a.AssetID] = p.At
			case StatusFailed:
				failed++
				lastAttempt.add(a.AssetID, p.At, StatusFailed)
				prev, err := updateFromLease(ctx, tx, st.failStatus, a.AssetID, pr.Key, pr.InstanceID, a.RunID, p.At, nullIfEmpty(pr.Error), a.AssetID, pr.Key)
				if err != nil {
					return err
				}
				if prev != "" {
					roll.add(a.AssetID, pr.Idx, prev, -1)
					roll.add(a.AssetID, pr.Idx, StatusFailed, 1)
				}
			default: // interrupted or canceled: give the partition back its previous status
				var cur struct {
					Status      string  `db:"status"`
					LastAttempt *string `db:"last_attempt_status"`
					UpdatedAt   int64   `db:"updated_at"`
				}
				if err := tx.GetContext(ctx, &cur, `SELECT status, last_attempt_status, updated_at FROM partition_status WHERE asset_id=? AND partition_key=?`,
					a.AssetID, pr.Key); err != nil || cur.Status != StatusInProgress {
					continue
				}
				back := pr.Prev
				if cur.UpdatedAt > started && cur.LastAttempt != nil {
					// Reported while the lease held (leasedStatus): what was
					// reported is its status now.
					back = *cur.LastAttempt
				}
				roll.add(a.AssetID, pr.Idx, StatusInProgress, -1)
				if back == "" {
					_, err = st.delStatus.ExecContext(ctx, a.AssetID, pr.Key)
				} else {
					_, err = tx.ExecContext(ctx, `UPDATE partition_status SET status=?, lease_instance_id=NULL, lease_run_id=NULL, lease_code_version=NULL, updated_at=?
						WHERE asset_id=? AND partition_key=?`, back, p.At, a.AssetID, pr.Key)
					roll.add(a.AssetID, pr.Idx, back, 1)
				}
				if err != nil {
					return err
				}
			}
		}
		for _, pr := range a.Failures {
			if _, err := st.insFailure.ExecContext(ctx, a.BackfillID, a.AssetID, pr.Key, pr.Idx, "failed", a.RunID); err != nil {
				return err
			}
		}
		c.running--
		final := a.RunState != RunQueued
		if a.RunState == RunSucceeded || (a.RunState == RunFailed && a.State != AttemptCanceled && a.State != AttemptInterrupted) {
			// A retry skips partitions someone else materialized while the
			// run waited (RunCheckpoint.Done): they count as materialized for
			// the run and its backfill when it ends, so that a finished
			// backfill has no partition left pending.
			var r struct {
				Partitions     int64 `db:"partitions"`
				Materialized   int64 `db:"materialized"`
				UpstreamFailed int64 `db:"upstream_failed"`
			}
			if err := tx.GetContext(ctx, &r, `SELECT partitions, materialized, upstream_failed FROM runs WHERE id=?`, a.RunID); err != nil {
				return err
			}
			if extra := r.Partitions - r.UpstreamFailed - int64(len(a.Failures)) - r.Materialized - mat; extra > 0 {
				mat += extra
			}
		}
		c.mat += mat
		var finished *int64
		var notBefore *int64
		if final {
			at := p.At
			finished = &at
			c.active--
			switch a.RunState {
			case RunSucceeded:
				c.succ++
			case RunFailed:
				c.failed++
				c.pfailed += int64(len(a.Failures))
			case RunCanceled:
				c.canceled++
			}
		} else if a.NotBefore > 0 {
			nb := a.NotBefore
			notBefore = &nb
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET state=?, materialized=materialized+?, failed=?, error=?, not_before=?, finished_at=?, updated_at=? WHERE id=?`,
			a.RunState, mat, int64(len(a.Failures)), nullIfEmpty(a.Error), notBefore, finished, p.At, a.RunID); err != nil {
			return err
		}
	}
	if err := finishMaterialized(ctx, tx, st, plain, p.At, roll); err != nil {
		return err
	}
	for id, c := range perBackfill {
		if _, err := tx.ExecContext(ctx, `UPDATE backfills SET runs_running=runs_running+?, runs_active=runs_active+?, runs_succeeded=runs_succeeded+?,
			runs_failed=runs_failed+?, runs_canceled=runs_canceled+?, partitions_materialized=partitions_materialized+?, partitions_failed=partitions_failed+?,
			updated_at=? WHERE id=?`, c.running, c.active, c.succ, c.failed, c.canceled, c.mat, c.pfailed, p.At, id); err != nil {
			return err
		}
	}
	for id, at := range lastMat {
		if _, err := tx.ExecContext(ctx, `UPDATE assets SET last_materialized_at = MAX(COALESCE(last_materialized_at, 0), ?) WHERE id=?`, at, id); err != nil {
			return err
		}
	}
	if err := lastAttempt.apply(ctx, tx); err != nil {
		return err
	}
	return roll.apply(ctx, tx)
}

// plainMat is a partition materialized without metadata or error.
type plainMat struct {
	asset     int64
	code, run string
	started   int64 // when its attempt started
	part      PartRef
}

// finishMaterialized records partitions materialized without metadata or
// error: their instances inserted in statements of batchRows across
// attempts, their status rows updated in one statement per attempt, guarded
// by the lease; rows someone else changed meanwhile go through
// updateFromLease one by one.
func finishMaterialized(ctx context.Context, tx *sqlx.Tx, st *stmts, items []plainMat, at int64, roll rollupDelta) error {
	byAsset := map[[2]string][]plainMat{}
	var order [][2]string
	for _, it := range items {
		k := [2]string{fmt.Sprint(it.asset), it.code}
		if _, ok := byAsset[k]; !ok {
			order = append(order, k)
		}
		byAsset[k] = append(byAsset[k], it)
	}
	for _, k := range order {
		group := byAsset[k]
		assetID, code := group[0].asset, group[0].code
		// The instances, in statements of batchRows rows. Instances recorded
		// in progress by earlier versions are completed in place.
		inst := make([]any, 0, 4*len(group))
		for _, it := range group {
			inst = append(inst, it.part.InstanceID, it.part.Key, it.run, it.started)
		}
		if err := batchExec(ctx, tx, `INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, code_version, source, started_at, finished_at, created_at)
			SELECT column1, ?, column2, column3, 'materialized', ?, 'backfill', column4, ?, column4 FROM (VALUES `, []any{assetID, code, at},
			`(?,?,?,?)`, `) WHERE true ON CONFLICT (asset_id, partition_key, id) DO UPDATE SET status='materialized', metadata=NULL, error=NULL, finished_at=excluded.finished_at`,
			4, inst); err != nil {
			return err
		}
		for off := 0; off < len(group); off += batchRows {
			chunk := group[off:min(off+batchRows, len(group))]
			// One attempt's partitions at a time: their instance ids share
			// their first 14 characters (attemptPrefix), which finds the
			// attempt's instance of each partition, and each status row
			// takes its instance id from the lease it holds
			// (lease_instance_id), so every row gets the same values. Status
			// rows whose lease is not this attempt's (someone reported the
			// partition meanwhile) go one by one below.
			var rest []plainMat
			for lo := 0; lo < len(chunk); {
				hi := lo + 1
				for hi < len(chunk) && chunk[hi].run == chunk[lo].run && attemptPrefix(chunk[hi].part.InstanceID) == attemptPrefix(chunk[lo].part.InstanceID) {
					hi++
				}
				part := chunk[lo:hi]
				lo = hi
				prefix := attemptPrefix(part[0].part.InstanceID)
				marks := strings.Repeat(",?", len(part)-1)
				args := make([]any, 0, len(part)+8)
				args = append(args, part[0].run, at, code, at, at, assetID, prefix)
				for _, it := range part {
					args = append(args, it.part.Key)
				}
				res, err := tx.ExecContext(ctx, `UPDATE partition_status SET status='materialized', materialized=1,
					last_mat_instance_id=lease_instance_id, last_mat_run_id=?, last_mat_at=?, last_mat_code_version=?, last_mat_metadata=NULL,
					last_attempt_instance_id=NULL, last_attempt_run_id=NULL, last_attempt_at=?, last_attempt_status='materialized', last_attempt_error=NULL,
					tainted_at=NULL, taint_reason=NULL, lease_instance_id=NULL, lease_run_id=NULL, lease_code_version=NULL, updated_at=?
					WHERE asset_id=? AND status='in_progress' AND substr(lease_instance_id, 1, 14)=? AND partition_key IN (?`+marks+`)`, args...)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); int(n) == len(part) {
					for _, it := range part {
						roll.add(assetID, it.part.Idx, StatusInProgress, -1)
						roll.add(assetID, it.part.Idx, StatusMaterialized, 1)
					}
					continue
				}
				rest = append(rest, part...)
			}
			for _, it := range rest {
				pr := it.part
				var cur struct {
					Status string  `db:"status"`
					Inst   *string `db:"last_attempt_instance_id"`
				}
				if err := tx.GetContext(ctx, &cur, `SELECT status, COALESCE(last_attempt_instance_id, IIF(last_attempt_status='materialized', last_mat_instance_id, NULL)) AS last_attempt_instance_id
					FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, pr.Key); err != nil {
					continue // no row: nothing to project
				}
				if cur.Inst != nil && *cur.Inst == pr.InstanceID && cur.Status == StatusMaterialized {
					roll.add(assetID, pr.Idx, StatusInProgress, -1)
					roll.add(assetID, pr.Idx, StatusMaterialized, 1)
					continue
				}
				prev, err := updateFromLease(ctx, tx, st.matStatus, assetID, pr.Key, pr.InstanceID, it.run, at, code, nil, assetID, pr.Key)
				if err != nil {
					return err
				}
				if prev != "" {
					roll.add(assetID, pr.Idx, prev, -1)
					roll.add(assetID, pr.Idx, StatusMaterialized, 1)
				}
			}
		}
	}
	return nil
}

// attemptPrefix is what the instance ids of one attempt's partitions have
// in common: "pi_" and the 11 characters derived from the run, attempt and
// asset alone (InstanceIDs).
func attemptPrefix(instanceID string) string {
	return instanceID[:min(14, len(instanceID))]
}

// batchRows is how many rows one multi-row statement carries.
const batchRows = 500

// batchExec runs prefix + row,row,... + suffix over head (the arguments of
// prefix) and args (n per row), in statements of at most batchRows rows.
func batchExec(ctx context.Context, tx *sqlx.Tx, prefix string, head []any, row, suffix string, n int, args []any) error {
	for len(args) > 0 {
		k := min(len(args)/n, batchRows)
		var b strings.Builder
		b.Grow(len(prefix) + k*(len(row)+1) + len(suffix))
		b.WriteString(prefix)
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(row)
		}
		b.WriteString(suffix)
		stmtArgs := args[:k*n]
		if len(head) > 0 {
			stmtArgs = append(slices.Clip(head), stmtArgs...)
		}
		if _, err := tx.ExecContext(ctx, b.String(), stmtArgs...); err != nil {
			return err
		}
		args = args[k*n:]
	}
	return nil
}

// updateFromLease runs a status update guarded by status=in_progress (the
// lease this attempt holds); when someone else changed the row meanwhile
// (an external report), it applies the update over that status instead. It
// returns the status it replaced ("" when there is no row).
func updateFromLease(ctx context.Context, tx *sqlx.Tx, st *sqlx.Stmt, assetID int64, key string, args ...any) (string, error) {
	res, err := st.ExecContext(ctx, append(args, StatusInProgress)...)
	if err != nil {
		return "", err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return StatusInProgress, nil
	}
	var cur string
	if err := tx.GetContext(ctx, &cur, `SELECT status FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, key); err != nil {
		return "", nil
	}
	if _, err := st.ExecContext(ctx, append(args, cur)...); err != nil {
		return "", err
	}
	return cur, nil
}

// StatusRows reads the stored status of partitions of an asset (key → status)
// inside tx, for keys in [lo, hi] when contiguous, or by key.
func StatusRows(ctx context.Context, tx *sqlx.Tx, assetID, lo, hi int64) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT partition_key, status FROM partition_status WHERE asset_id=? AND idx BETWEEN ? AND ?`, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, s string
		if err := rows.Scan(&k, &s); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, rows.Err()
}

// RunCheckpoint is what a new attempt of a run may skip and what it must
// not count twice.
type RunCheckpoint struct {
	// Done: partitions materialized since the run started, by it or by
	// anyone else, and not tainted since: a retry does not build them again.
	Done map[string]bool
	// Built: partitions an earlier attempt of the run materialized; when one
	// is built again (tainted or failed since), it is not counted twice.
	Built map[string]bool
}

// RunCheckpointOf reads the checkpoint of run (which started at since) over
// keys, partitions of asset.
func RunCheckpointOf(ctx context.Context, q getter, assetID int64, runID string, since int64, keys []string) (RunCheckpoint, error) {
	var cp RunCheckpoint
	var err error
	cp.Done, err = keysWhere(ctx, q, `SELECT partition_key FROM partition_status WHERE asset_id=? AND partition_key IN (%s)
		AND status='materialized' AND tainted_at IS NULL AND (last_mat_run_id=? OR last_mat_at>=?)`, assetID, keys, runID, since)
	if err != nil {
		return cp, err
	}
	cp.Built, err = keysWhere(ctx, q, `SELECT DISTINCT partition_key FROM partition_instances WHERE asset_id=? AND partition_key IN (%s)
		AND run_id=? AND status='materialized'`, assetID, keys, runID)
	return cp, err
}

// MaterializedByOthers returns which of keys (partitions of asset) someone
// other than run materialized while the run lasted (from since to until,
// ms), and not tainted since: key → the run id that built it.
func (s *Store) MaterializedByOthers(ctx context.Context, assetID int64, runID string, since, until int64, keys []string) (map[string]string, error) {
	out := map[string]string{}
	for len(keys) > 0 {
		k := min(len(keys), batchRows)
		args := []any{assetID}
		for _, key := range keys[:k] {
			args = append(args, key)
		}
		var got []struct {
			Key string `db:"partition_key"`
			Run string `db:"last_mat_run_id"`
		}
		if err := s.R.SelectContext(ctx, &got, `SELECT partition_key, COALESCE(last_mat_run_id, '') AS last_mat_run_id FROM partition_status
			WHERE asset_id=? AND partition_key IN (?`+strings.Repeat(",?", k-1)+`) AND status='materialized' AND tainted_at IS NULL
			AND last_mat_at BETWEEN ? AND ? AND COALESCE(last_mat_run_id, '')!=?`, append(args, since, until, runID)...); err != nil {
			return nil, err
		}
		for _, g := range got {
			if g.Run == "" {
				g.Run = "a report"
			}
			out[g.Key] = g.Run
		}
		keys = keys[k:]
	}
	return out, nil
}

// FailedByRun returns which of keys (partitions of asset) are failed by the
// last attempt of run.
func FailedByRun(ctx context.Context, q getter, assetID int64, runID string, keys []string) (map[string]bool, error) {
	return keysWhere(ctx, q, `SELECT partition_key FROM partition_status WHERE asset_id=? AND partition_key IN (%s)
		AND status='failed' AND last_attempt_run_id=?`, assetID, keys, runID)
}

// keysWhere runs query (one row per partition key it selects) over keys in
// batches: its placeholders are the asset id, the batch's keys in place of
// %s, then after.
func keysWhere(ctx context.Context, q getter, query string, assetID int64, keys []string, after ...any) (map[string]bool, error) {
	out := map[string]bool{}
	for len(keys) > 0 {
		k := min(len(keys), batchRows)
		args := make([]any, 0, k+1+len(after))
		args = append(args, assetID)
		for _, key := range keys[:k] {
			args = append(args, key)
		}
		var got []string
		if err := q.SelectContext(ctx, &got, fmt.Sprintf(query, "?"+strings.Repeat(",?", k-1)), append(args, after...)...); err != nil {
			return nil, err
		}
		for _, g := range got {
			out[g] = true
		}
		keys = keys[k:]
	}
	return out, nil
}

// InProgressInstances returns which of the instances ids[i] of partitions
// keys[i] of an asset are still in progress: their status row holds the
// lease for them.
func InProgressInstances(ctx context.Context, q getter, assetID int64, keys, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for len(ids) > 0 {
		k := min(len(ids), batchRows)
		args := make([]any, 0, 2*k+1)
		args = append(args, assetID)
		for _, key := range keys[:k] {
			args = append(args, key)
		}
		for _, id := range ids[:k] {
			args = append(args, id)
		}
		marks := strings.Repeat(",?", k-1)
		var got []string
		if err := q.SelectContext(ctx, &got, `SELECT lease_instance_id FROM partition_status WHERE asset_id=? AND partition_key IN (?`+marks+`)
			AND status='in_progress' AND lease_instance_id IN (?`+marks+`)`, args...); err != nil {
			return nil, err
		}
		for _, g := range got {
			out[g] = true
		}
		keys, ids = keys[k:], ids[k:]
	}
	return out, nil
}
