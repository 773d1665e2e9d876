package db

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

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

// applyFinished records the attempts of an attempts.finished event: each
// attempt's row, its partitions' instances and status rows, its failures and
// its run; then, once for the event, the partitions materialized plainly (in
// batches), the backfills' counters, the assets' last materialization and
// last attempt, and the status rollups.
func applyFinished(ctx context.Context, tx *sqlx.Tx, p AttemptsFinished) error {
	st := prepare(tx)
	open, reindexed, err := instanceRecording(ctx, tx)
	if err != nil {
		return err
	}
	n := 0
	for _, a := range p.Attempts {
		n += len(a.Parts)
	}
	f := &finishing{st: st, at: p.At, rowsOnly: open, reindexed: reindexed, plain: make([]plainMat, 0, n), roll: rollupDelta{}, perBackfill: map[string]*runCounts{}, lastMat: map[int64]int64{}, lastAttempt: lastAttempts{}}
	if err := f.batchRunsAndAttempts(ctx, tx, p.Attempts); err != nil {
		return err
	}
	for _, a := range p.Attempts {
		if err := f.attempt(ctx, tx, a); err != nil {
			return err
		}
	}
	if err := finishMaterialized(ctx, tx, st, f.plain, p.At, f.roll); err != nil {
		return err
	}
	if err := f.updateRuns(ctx, tx); err != nil {
		return err
	}
	return f.flush(ctx, tx)
}

// batchRunsAndAttempts, when the event's attempts are of different runs
// (always, for the engine's events), ends the attempts in batched
// statements and reads their runs in one, before they are recorded one by
// one; f.attempt and f.run then leave those statements out and f.run's
// updates of the runs wait for updateRuns. A step finishing eight chunks
// then makes three round trips for them on PostgreSQL, not twenty-four.
// Ending every attempt of the event first is safe: attempts that run at
// once lease different partitions, so one attempt's lease ending never
// changes how another's partitions are recorded.
func (f *finishing) batchRunsAndAttempts(ctx context.Context, tx *sqlx.Tx, ends []AttemptEnd) error {
	ids := make([]any, 0, len(ends))
	seen := make(map[string]bool, len(ends))
	ended := make([]any, 0, 7*len(ends))
	for _, a := range ends {
		if seen[a.RunID] {
			return nil // two attempts of one run: recorded one by one, in order
		}
		seen[a.RunID] = true
		ids = append(ids, a.RunID)
		built, broke := attemptOutcomes(a)
		ended = append(ended, a.RunID, a.Attempt, a.State, f.endedAt(a), nullIfEmpty(a.Error), built, broke)
	}
	if len(ends) == 0 {
		return nil
	}
	if err := batchExec(ctx, tx, `UPDATE attempts SET state=v.column3, finished_at=v.column4, error=v.column5, materialized=v.column6, failed=v.column7,
		lease_lo=NULL, lease_hi=NULL, lease=NULL FROM (VALUES `, nil, `(?,?,?,?,?,?,?)`,
		`) AS v WHERE attempts.run_id=v.column1 AND attempts.attempt=v.column2`, 7, ended); err != nil {
		return err
	}
	f.runRows = make(map[string]runRow, len(ids))
	for lo := 0; lo < len(ids); lo += batchRows {
		part := ids[lo:min(lo+batchRows, len(ids))]
		k := padPow2(len(part))
		for range k - len(part) {
			part = append(part, part[len(part)-1])
		}
		var rows []runRow
		if err := tx.SelectContext(ctx, &rows, `SELECT id, partitions, materialized, upstream_failed FROM runs WHERE id IN (?`+strings.Repeat(",?", k-1)+`)`, part...); err != nil {
			return err
		}
		for _, r := range rows {
			f.runRows[r.ID] = r
		}
	}
	f.batched = true
	return nil
}

// updateRuns writes the runs' updates f.run gathered, in batched statements.
func (f *finishing) updateRuns(ctx context.Context, tx *sqlx.Tx) error {
	if len(f.runUpdates) == 0 {
		return nil
	}
	return batchExec(ctx, tx, `UPDATE runs SET state=v.column2, materialized=materialized+v.column3, failed=v.column4, error=v.column5, not_before=v.column6,
		finished_at=v.column7, updated_at=v.column8 FROM (VALUES `, nil, `(?,?,?,?,?,?,?,?)`, `) AS v WHERE runs.id=v.column1`, 8, f.runUpdates)
}

// runRow is what finishing reads of a run before recording its attempt.
type runRow struct {
	ID             string `db:"id"`
	Partitions     int64  `db:"partitions"`
	Materialized   int64  `db:"materialized"`
	UpstreamFailed int64  `db:"upstream_failed"`
}

// attemptOutcomes counts an attempt's partitions materialized and failed
// (for the throughput chart).
func attemptOutcomes(a AttemptEnd) (built, broke int64) {
	for _, pr := range a.Parts {
		switch pr.Status {
		case StatusMaterialized:
			built++
		case StatusFailed:
			broke++
		}
	}
	return built, broke
}

// endedAt is when attempt a ended: the event's time, or earlier when the
// attempt says so (an interrupted attempt ended when its server was last
// seen).
func (f *finishing) endedAt(a AttemptEnd) int64 {
	if a.Finished > 0 && a.Finished < f.at {
		return a.Finished
	}
	return f.at
}

// finishing is what applyFinished gathers across the attempts of one event
// to write once, at the end.
type finishing struct {
	st          *stmts
	at          int64 // the event's time
	roll        rollupDelta
	perBackfill map[string]*runCounts
	lastMat     map[int64]int64
	lastAttempt lastAttempts
	plain       []plainMat
	// batched: the attempts were ended and their runs read at once
	// (batchRunsAndAttempts); runUpdates gathers the runs' updates.
	batched    bool
	runRows    map[string]runRow
	runUpdates []any
	// rowsOnly: instances are recorded as rows, not ranges (an instance
	// row is still open: instanceRecording).
	rowsOnly bool
	// reindexed: running attempts whose asset was re-indexed; they record
	// their instances as rows.
	reindexed map[attemptKey]bool
}

// runCounts are the changes to a backfill's run and partition counters.
type runCounts struct{ running, active, succ, failed, canceled, mat, pfailed int64 }

// attempt records one finished attempt: its attempts row, its partitions,
// the partitions it failed for good, and its run.
func (f *finishing) attempt(ctx context.Context, tx *sqlx.Tx, a AttemptEnd) error {
	c := f.perBackfill[a.BackfillID]
	if c == nil {
		c = &runCounts{}
		f.perBackfill[a.BackfillID] = c
	}
	if !f.batched { // else ended by batchRunsAndAttempts
		built, broke := attemptOutcomes(a)
		// The attempt's lease on partitions without a status row ends with it.
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state=?, finished_at=?, error=?, materialized=?, failed=?, lease_lo=NULL, lease_hi=NULL, lease=NULL
			WHERE run_id=? AND attempt=?`, a.State, f.endedAt(a), nullIfEmpty(a.Error), built, broke, a.RunID, a.Attempt); err != nil {
			return err
		}
	}
	started := a.Started
	if started == 0 {
		// Events written before they carried it: the attempt row has it.
		if err := tx.GetContext(ctx, &started, `SELECT started_at FROM attempts WHERE run_id=? AND attempt=?`, a.RunID, a.Attempt); err != nil {
			return err
		}
	}
	mat, err := f.parts(ctx, tx, a, started, !f.rowsOnly && !f.reindexed[attemptKey{a.RunID, a.Attempt}])
	if err != nil {
		return err
	}
	for _, pr := range a.Failures {
		if _, err := f.st.insFailure.ExecContext(ctx, a.BackfillID, a.AssetID, pr.Key, pr.Idx, "failed", a.RunID); err != nil {
			return err
		}
	}
	c.running--
	return f.run(ctx, tx, a, c, mat)
}

// parts records the partitions of attempt a, started at started: plainly
// materialized ones are kept for finishMaterialized, the others get their
// instance and status row now. It returns how many the attempt
// materialized for its run (not counting those materialized again).
// ranges: plainly materialized partitions whose instance ids are derived
// may have their instances recorded in ranges (instance_ranges.go).
func (f *finishing) parts(ctx context.Context, tx *sqlx.Tx, a AttemptEnd, started int64, ranges bool) (int64, error) {
	st, roll := f.st, f.roll
	var mat, failed int64
	ids := partIDs{runID: a.RunID, asset: a.Asset, attempt: a.Attempt}
	for j := range a.Parts {
		pr := ids.of(a.Parts[j])
		var meta *string
		if len(pr.Metadata) > 0 && string(pr.Metadata) != "null" {
			s := string(pr.Metadata)
			meta = &s
		}
		// Leased without a status row (its row, if one appeared meanwhile,
		// is found when the row is inserted: then it is updated as below).
		fresh := pr.Prev == ""
		if pr.Status == StatusMaterialized && meta == nil && pr.Error == "" {
			// The common case, written in batches below.
			ranged := ranges && a.Asset != "" && a.Parts[j].InstanceID == "" && pr.Idx >= 0
			f.plain = append(f.plain, plainMat{asset: a.AssetID, code: a.CodeVersion, run: a.RunID, started: started, part: matPart{pr.Key, pr.Idx, pr.InstanceID}, fresh: fresh,
				ranged: ranged, attempt: a.Attempt, assetKey: a.Asset})
			f.lastMat[a.AssetID] = f.at
			f.lastAttempt.add(a.AssetID, f.at, StatusMaterialized)
			if !pr.Again {
				mat++
			}
			continue
		}
		if _, err := st.finInst.ExecContext(ctx, pr.InstanceID, a.AssetID, pr.Key, a.RunID, pr.Status, a.CodeVersion, meta, nullIfEmpty(pr.Error), started, f.at); err != nil {
			return 0, err
		}
		if fresh {
			ok, err := f.freshRow(ctx, tx, a, pr, meta)
			if err != nil {
				return 0, err
			}
			if ok {
				switch pr.Status {
				case StatusMaterialized:
					if !pr.Again {
						mat++
					}
				case StatusFailed:
					failed++
				}
				continue
			}
			// A row appeared meanwhile: as if the attempt had held it.
		}
		switch pr.Status {
		case StatusMaterialized:
			if !pr.Again {
				mat++
			}
			f.lastAttempt.add(a.AssetID, f.at, StatusMaterialized)
			prev, err := updateFromLease(ctx, tx, st.matStatus, a.AssetID, pr.Key, pr.InstanceID, a.RunID, f.at, a.CodeVersion, meta, a.AssetID, pr.Key)
			if err != nil {
				return 0, err
			}
			if prev != "" {
				roll.add(a.AssetID, pr.Idx, prev, -1)
				roll.add(a.AssetID, pr.Idx, StatusMaterialized, 1)
			}
			f.lastMat[a.AssetID] = f.at
		case StatusFailed:
			failed++
			f.lastAttempt.add(a.AssetID, f.at, StatusFailed)
			prev, err := updateFromLease(ctx, tx, st.failStatus, a.AssetID, pr.Key, pr.InstanceID, a.RunID, f.at, nullIfEmpty(pr.Error), a.AssetID, pr.Key)
			if err != nil {
				return 0, err
			}
			if prev != "" {
				roll.add(a.AssetID, pr.Idx, prev, -1)
				roll.add(a.AssetID, pr.Idx, StatusFailed, 1)
			}
		default: // interrupted or canceled: give the partition back its previous status
			if err := f.giveBack(ctx, tx, a, pr, started); err != nil {
				return 0, err
			}
		}
	}
	return mat, nil
}

// freshRow records the result of a partition the attempt leased without a
// status row, other than plainly materialized (finishMaterialized): the
// partition's row, written once (materialized with metadata, or failed),
// or nothing for an attempt interrupted or canceled, which gives the
// partition back to missing. ok is false, and nothing written, when the
// partition has a row after all: the caller then updates it.
func (f *finishing) freshRow(ctx context.Context, tx *sqlx.Tx, a AttemptEnd, pr PartRef, meta *string) (ok bool, err error) {
	var res sql.Result
	switch pr.Status {
	case StatusMaterialized:
		f.lastAttempt.add(a.AssetID, f.at, StatusMaterialized)
		f.lastMat[a.AssetID] = f.at
		res, err = tx.ExecContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
			last_mat_instance_id, last_mat_run_id, last_mat_at, last_mat_code_version, last_mat_metadata, last_attempt_at, last_attempt_status, updated_at)
			VALUES (?1,?2,?3,'materialized',1, ?4,?5,?6,?7,?8,?6,'materialized',?6) ON CONFLICT DO NOTHING`,
			a.AssetID, pr.Key, pr.Idx, pr.InstanceID, a.RunID, f.at, a.CodeVersion, meta)
	case StatusFailed:
		f.lastAttempt.add(a.AssetID, f.at, StatusFailed)
		res, err = tx.ExecContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
			last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, last_attempt_error, updated_at)
			VALUES (?1,?2,?3,'failed',0, ?4,?5,?6,'failed',?7,?6) ON CONFLICT DO NOTHING`,
			a.AssetID, pr.Key, pr.Idx, pr.InstanceID, a.RunID, f.at, nullIfEmpty(pr.Error))
	default: // interrupted or canceled: no row to give back, unless one appeared
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM partition_status WHERE asset_id=? AND partition_key=?`, a.AssetID, pr.Key); err != nil || n > 0 {
			return false, err
		}
		f.roll.add(a.AssetID, pr.Idx, StatusInProgress, -1)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil
	}
	f.roll.add(a.AssetID, pr.Idx, StatusInProgress, -1)
	f.roll.add(a.AssetID, pr.Idx, pr.Status, 1)
	return true, nil
}

// giveBack gives a partition of an interrupted or canceled attempt, started
// at started, back its status before the attempt, or what was reported for
// it while the lease held. A partition no longer in progress is left alone.
func (f *finishing) giveBack(ctx context.Context, tx *sqlx.Tx, a AttemptEnd, pr PartRef, started int64) error {
	var cur struct {
		Status      string  `db:"status"`
		LastAttempt *string `db:"last_attempt_status"`
		UpdatedAt   int64   `db:"updated_at"`
	}
	if err := tx.GetContext(ctx, &cur, `SELECT status, last_attempt_status, updated_at FROM partition_status WHERE asset_id=? AND partition_key=?`,
		a.AssetID, pr.Key); err != nil || cur.Status != StatusInProgress {
		return nil
	}
	back := pr.Prev
	if cur.UpdatedAt > started && cur.LastAttempt != nil {
		// Reported while the lease held (leasedStatus): what was
		// reported is its status now.
		back = *cur.LastAttempt
	}
	f.roll.add(a.AssetID, pr.Idx, StatusInProgress, -1)
	var err error
	if back == "" {
		_, err = f.st.delStatus.ExecContext(ctx, a.AssetID, pr.Key)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE partition_status SET status=?, lease_instance_id=NULL, lease_run_id=NULL, lease_code_version=NULL, updated_at=?
			WHERE asset_id=? AND partition_key=?`, back, f.at, a.AssetID, pr.Key)
		f.roll.add(a.AssetID, pr.Idx, back, 1)
	}
	return err
}

// run updates attempt a's run (its state, counts, retry time or end) and
// its backfill's counters c; mat is what the attempt materialized.
func (f *finishing) run(ctx context.Context, tx *sqlx.Tx, a AttemptEnd, c *runCounts, mat int64) error {
	final := a.RunState != RunQueued
	if a.RunState == RunSucceeded || (a.RunState == RunFailed && a.State != AttemptCanceled && a.State != AttemptInterrupted) {
		// A retry skips partitions someone else materialized while the
		// run waited (RunCheckpoint.Done): they count as materialized for
		// the run and its backfill when it ends, so that a finished
		// backfill has no partition left pending.
		r, ok := f.runRows[a.RunID]
		if !f.batched {
			if err := tx.GetContext(ctx, &r, `SELECT id, partitions, materialized, upstream_failed FROM runs WHERE id=?`, a.RunID); err != nil {
				return err
			}
		} else if !ok {
			return fmt.Errorf("finishing attempt %d of run %s: %w", a.Attempt, a.RunID, sql.ErrNoRows)
		}
		if extra := r.Partitions - r.UpstreamFailed - int64(len(a.Failures)) - r.Materialized - mat; extra > 0 {
			mat += extra
		}
	}
	c.mat += mat
	var finished *int64
	var notBefore *int64
	if final {
		at := f.at
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
	if f.batched {
		f.runUpdates = append(f.runUpdates, a.RunID, a.RunState, mat, int64(len(a.Failures)), nullIfEmpty(a.Error), notBefore, finished, f.at)
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE runs SET state=?, materialized=materialized+?, failed=?, error=?, not_before=?, finished_at=?, updated_at=? WHERE id=?`,
		a.RunState, mat, int64(len(a.Failures)), nullIfEmpty(a.Error), notBefore, finished, f.at, a.RunID)
	return err
}

// flush writes what the event's attempts gathered: the backfills' counters,
// the assets' last materialization and last attempt, the status rollups.
func (f *finishing) flush(ctx context.Context, tx *sqlx.Tx) error {
	for id, c := range f.perBackfill {
		if err := execLater(ctx, tx, `UPDATE backfills SET runs_running=runs_running+?, runs_active=runs_active+?, runs_succeeded=runs_succeeded+?,
			runs_failed=runs_failed+?, runs_canceled=runs_canceled+?, partitions_materialized=partitions_materialized+?, partitions_failed=partitions_failed+?,
			updated_at=? WHERE id=?`, c.running, c.active, c.succ, c.failed, c.canceled, c.mat, c.pfailed, f.at, id); err != nil {
			return err
		}
	}
	if err := applyAssetLasts(ctx, tx, f.lastMat, f.lastAttempt); err != nil {
		return err
	}
	return f.roll.apply(ctx, tx)
}

// plainMat is a partition materialized without metadata or error.
type plainMat struct {
	asset     int64
	code, run string
	started   int64 // when its attempt started
	part      matPart
	// fresh: the attempt leased the partition without a status row; its
	// row is inserted now.
	fresh bool
	// ranged: its instance is recorded in a range of its attempt
	// (instance_ranges.go), not as a row.
	ranged   bool
	attempt  int64
	assetKey string
}

// matPart is what a plainMat keeps of its PartRef: a sixth of its size,
// for every partition of every attempt a step finishes.
type matPart struct {
	Key        string
	Idx        int64
	InstanceID string
}

// finishMaterialized records partitions materialized without metadata or
// error: their instances inserted in statements of batchRows across
// attempts, their status rows updated in one statement per attempt, guarded
// by the lease; rows someone else changed meanwhile go through
// updateFromLease one by one.
func finishMaterialized(ctx context.Context, tx *sqlx.Tx, st *stmts, items []plainMat, at int64, roll rollupDelta) error {
	type assetCode struct {
		asset int64
		code  string
	}
	var groups [][]plainMat
	if len(items) > 0 && !slices.ContainsFunc(items, func(it plainMat) bool { return it.asset != items[0].asset || it.code != items[0].code }) {
		groups = [][]plainMat{items} // one asset and code version: the common case, not copied
	} else {
		groups = GroupBy(items, func(it plainMat) assetCode { return assetCode{it.asset, it.code} })
	}
	for _, group := range groups {
		assetID, code := group[0].asset, group[0].code
		// Partitions leased without a status row: in status ranges where
		// they can be (status_ranges.go), which stand for their status
		// rows and their instances.
		took, err := insertStatusRanges(ctx, tx, assetID, code, at, group, roll)
		if err != nil {
			return err
		}
		if took != nil {
			left := make([]plainMat, 0, len(group)-rangedCount(took))
			for i, it := range group {
				if !took[i] {
					left = append(left, it)
				}
			}
			group = left
		}
		// The instances: ranges of their attempts where they can, else
		// rows, in statements of batchRows rows. Instances recorded in
		// progress by earlier versions are completed in place.
		var inst []any
		ranged := make([]rangedInst, 0, len(group))
		for _, it := range group {
			if it.ranged {
				ranged = append(ranged, rangedInst{run: it.run, attempt: it.attempt, asset: it.assetKey, started: it.started, idx: it.part.Idx})
				continue
			}
			inst = append(inst, it.part.InstanceID, it.part.Key, it.run, it.started)
		}
		if err := insertInstanceRanges(ctx, tx, assetID, code, at, ranged); err != nil {
			return err
		}
		if err := batchExec(ctx, tx, `INSERT INTO instance_rows (id, asset_id, partition_key, run_id, status, code_version, source, started_at, finished_at, created_at)
			SELECT column1, ?, column2, column3, 'materialized', ?, 'backfill', column4, ?, column4 FROM (VALUES `, []any{assetID, code, at},
			`(?,?,?,?)`, `) WHERE true ON CONFLICT (asset_id, partition_key, id) DO UPDATE SET status='materialized', metadata=NULL, error=NULL, finished_at=excluded.finished_at`,
			4, inst); err != nil {
			return err
		}
		// Partitions leased without a status row: their row inserted,
		// written once.
		fresh, held := group, []plainMat(nil)
		if slices.ContainsFunc(group, func(it plainMat) bool { return !it.fresh }) {
			fresh = nil
			for _, it := range group {
				if it.fresh {
					fresh = append(fresh, it)
				} else {
					held = append(held, it)
				}
			}
		}
		group = held
		rest, err := insertMaterialized(ctx, tx, fresh, assetID, code, at, roll)
		if err != nil {
			return err
		}
		if err := materializedOneByOne(ctx, tx, st, rest, assetID, code, at, roll); err != nil {
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
				// The key list padded to a power of two (repeating the
				// last key) so that few statement texts are cached.
				keys := padPow2(len(part))
				marks := strings.Repeat(",?", keys-1)
				args := make([]any, 0, keys+8)
				args = append(args, part[0].run, at, code, at, at, assetID, prefix)
				for _, it := range part {
					args = append(args, it.part.Key)
				}
				for range keys - len(part) {
					args = append(args, part[len(part)-1].part.Key)
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
			if err := materializedOneByOne(ctx, tx, st, rest, assetID, code, at, roll); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertMaterialized inserts the status rows of partitions materialized
// plainly that their attempts leased without a row (plainMat.fresh), across
// attempts in statements of batchRows rows (the run is a column of each
// row: a step finishing eight chunks of 100 writes their 800 rows in three
// statements, not three per chunk). It returns the partitions of a
// statement whose rows were not all inserted (a row appeared meanwhile) for
// materializedOneByOne.
func insertMaterialized(ctx context.Context, tx *sqlx.Tx, items []plainMat, assetID int64, code string, at int64, roll rollupDelta) ([]plainMat, error) {
	if pc, ok := copyConn(tx); ok && len(items) >= copyMinRows {
		ok, err := copyMaterialized(ctx, tx, pc, items, assetID, code, at)
		if err != nil {
			return nil, err
		}
		if ok {
			for _, it := range items {
				roll.add(assetID, it.part.Idx, StatusInProgress, -1)
				roll.add(assetID, it.part.Idx, StatusMaterialized, 1)
			}
			return nil, nil
		}
	}
	var rest []plainMat
	for lo := 0; lo < len(items); {
		part := items[lo:min(lo+batchRows, len(items))]
		lo += len(part)
		args := make([]any, 0, 4*len(part))
		for _, it := range part {
			args = append(args, it.part.Key, it.part.Idx, it.part.InstanceID, it.run)
		}
		n, err := batchExecN(ctx, tx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
			last_mat_instance_id, last_mat_run_id, last_mat_at, last_mat_code_version, last_attempt_at, last_attempt_status, updated_at)
			SELECT ?, column1, column2, 'materialized', 1, column3, column4, ?, ?, ?, 'materialized', ? FROM (VALUES `, []any{assetID, at, code, at, at},
			`(?,?,?,?)`, `) WHERE true ON CONFLICT DO NOTHING`, 4, args)
		if err != nil {
			return nil, err
		}
		if int(n) != len(part) {
			// materializedOneByOne tells the rows inserted here (this
			// instance, materialized) from those that were there.
			rest = append(rest, part...)
			continue
		}
		for _, it := range part {
			roll.add(assetID, it.part.Idx, StatusInProgress, -1)
			roll.add(assetID, it.part.Idx, StatusMaterialized, 1)
		}
	}
	return rest, nil
}

// materializedOneByOne records partitions materialized plainly whose status
// row someone else changed while the attempt held it, one by one.
func materializedOneByOne(ctx context.Context, tx *sqlx.Tx, st *stmts, rest []plainMat, assetID int64, code string, at int64, roll rollupDelta) error {
	for _, it := range rest {
		pr := it.part
		var cur struct {
			Status string  `db:"status"`
			Inst   *string `db:"last_attempt_instance_id"`
		}
		if err := tx.GetContext(ctx, &cur, `SELECT status, COALESCE(last_attempt_instance_id, CASE WHEN last_attempt_status='materialized' THEN last_mat_instance_id END) AS last_attempt_instance_id
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
	return nil
}
