package db

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// stmts are the statements the attempt events run once per partition. They
// are executed by their text, not prepared explicitly: go-sqlite3 prepares
// an explicit Prepare anew every time, while the text goes through the
// writer connection's statement cache (_stmt_cache_size, see dsn), so a
// transaction does not parse them again (a fifth of the time of 20,000
// single-partition runs went to preparing these six).
type stmts struct {
	updStatus, delStatus, finInst, matStatus, failStatus, insFailure cachedStmt
}

// cachedStmt is one statement of stmts: its text, run in tx.
type cachedStmt struct {
	tx *sqlx.Tx
	q  string
}

// ExecContext runs the statement with args.
func (c cachedStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return c.tx.ExecContext(ctx, c.q, args...)
}

func prepare(tx *sqlx.Tx) *stmts {
	var s stmts
	p := func(dst *cachedStmt, q string) { *dst = cachedStmt{tx: tx, q: q} }
	p(&s.updStatus, `UPDATE partition_status SET status='in_progress', lease_instance_id=?, lease_run_id=?, lease_code_version=?, updated_at=?
		WHERE asset_id=? AND partition_key=?`)
	p(&s.delStatus, `DELETE FROM partition_status WHERE asset_id=? AND partition_key=?`)
	// An attempt's instances are recorded when it ends (instances recorded
	// in progress by earlier versions are completed in place).
	p(&s.finInst, `INSERT INTO instance_rows (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, created_at)
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
		ON CONFLICT (backfill_id, asset_id, partition_key) DO UPDATE SET reason=excluded.reason, run_id=excluded.run_id`)
	return &s
}

// attemptPrefix is what the instance ids of one attempt's partitions have
// in common: "pi_" and the 11 characters derived from the run, attempt and
// asset alone (InstanceIDs).
func attemptPrefix(instanceID string) string {
	return instanceID[:min(14, len(instanceID))]
}

// batchRows is how many rows one multi-row statement carries at most.
const batchRows = 512

// stmtRows is how many rows the next multi-row statement over n rows
// carries: batchRows, or the largest power of two not above n. Every
// statement text is a different prepared statement, and the writer caches
// 128 of them: with any count from 1 to 500, the last batch of each
// statement evicted the hot ones; with powers of two there are ten shapes a
// statement.
func stmtRows(n int) int {
	if n >= batchRows {
		return batchRows
	}
	k := 1
	for k*2 <= n {
		k *= 2
	}
	return k
}

// padPow2 is the smallest power of two not below n (n >= 1): the length
// a list of IN (...) marks is padded to, repeating its last value.
func padPow2(n int) int {
	k := 1
	for k < n {
		k *= 2
	}
	return k
}

// batchExec runs prefix + row,row,... + suffix over head (the arguments of
// prefix) and args (n per row), in statements of stmtRows rows.
func batchExec(ctx context.Context, tx *sqlx.Tx, prefix string, head []any, row, suffix string, n int, args []any) error {
	// Nothing reads their rows affected: on PostgreSQL they may be queued
	// (execLater).
	_, err := batchExecN(later(ctx), tx, prefix, head, row, suffix, n, args)
	return err
}

// batchExecN is batchExec, returning how many rows its statements changed.
func batchExecN(ctx context.Context, tx *sqlx.Tx, prefix string, head []any, row, suffix string, n int, args []any) (int64, error) {
	var changed int64
	first := row
	if dialectOf(tx) == Postgres && len(args) >= n {
		// PostgreSQL types a VALUES list's columns from their first row and
		// wants the list named.
		first, suffix = pgTypedRow(row, args[:n]), pgAliasValues(suffix)
	}
	for len(args) > 0 {
		k := stmtRows(len(args) / n)
		var b strings.Builder
		b.Grow(len(prefix) + k*(len(row)+1) + len(suffix) + len(first))
		b.WriteString(prefix)
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
				b.WriteString(row)
			} else {
				b.WriteString(first)
			}
		}
		b.WriteString(suffix)
		stmtArgs := args[:k*n]
		if len(head) > 0 {
			stmtArgs = append(slices.Clip(head), stmtArgs...)
		}
		res, err := tx.ExecContext(ctx, b.String(), stmtArgs...)
		if err != nil {
			return changed, err
		}
		if c, err := res.RowsAffected(); err == nil {
			changed += c
		}
		args = args[k*n:]
	}
	return changed, nil
}

// updateFromLease runs a status update guarded by status=in_progress (the
// lease this attempt holds); when someone else changed the row meanwhile
// (an external report), it applies the update over that status instead. It
// returns the status it replaced ("" when there is no row).
func updateFromLease(ctx context.Context, tx *sqlx.Tx, st cachedStmt, assetID int64, key string, args ...any) (string, error) {
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
