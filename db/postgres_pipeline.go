package db

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// On PostgreSQL every statement is a round trip, and a controller step
// makes some thirty of them: most are writes whose answer nothing waits
// for (the attempts and runs it ends, the rollups, the events, the
// backfill's counters). Those go through execLater: inside a transaction a
// store connection queues them (pipeline) and sends the queue as one batch
// (pgx's pipeline of extended-protocol messages, one network round trip)
// just before the connection's next statement that is not queued, its
// COPY, or the commit. Whatever reads in the transaction reads after the
// queued writes, as if they had run one by one. A queued statement's error
// (a constraint, a lost connection) comes back from that next statement
// or the commit, and the transaction is rolled back as it would have been.
// On SQLite execLater is an ExecContext: each statement is a function call
// in the process.

// laterKey marks a context whose statement may be queued.
type laterKey struct{}

// execLater runs a write whose result the caller does not read (rows
// affected, last id), queued on PostgreSQL until the transaction next
// needs its connection.
func execLater(ctx context.Context, tx *sqlx.Tx, q string, args ...any) error {
	_, err := tx.ExecContext(later(ctx), q, args...)
	return err
}

// later marks ctx: a write made with it may be queued (execLater).
func later(ctx context.Context) context.Context { return context.WithValue(ctx, laterKey{}, true) }

// pipeline is a connection's queue of statements not yet sent.
type pipeline struct {
	batch pgx.Batch
}

// errQueued is the rows-affected answer of a queued statement: nothing
// may read it (execLater's callers do not).
var errQueued = errors.New("db: a queued statement's result is not known until it is sent")

type queuedResult struct{}

func (queuedResult) LastInsertId() (int64, error) { return 0, errQueued }
func (queuedResult) RowsAffected() (int64, error) { return 0, errQueued }

// queue adds a statement to c's pipeline when ctx allows it and c is in a
// transaction; it answers whether it did.
func (c pgConn) queue(ctx context.Context, q string, args []driver.NamedValue) bool {
	if ctx.Value(laterKey{}) == nil || c.p == nil || c.Conn.Conn().PgConn().TxStatus() != 'T' {
		return false
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	c.p.batch.Queue(q, vals...)
	return true
}

// flush sends c's queued statements, if any, in one batch and reads their
// answers; the first error is returned.
func (c pgConn) flush(ctx context.Context) error {
	if c.p == nil || c.p.batch.Len() == 0 {
		return nil
	}
	b := c.p.batch
	c.p.batch = pgx.Batch{}
	br := c.Conn.Conn().SendBatch(ctx, &b)
	for range b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
	}
	return br.Close()
}

// discard drops c's queued statements (the transaction is rolled back).
func (c pgConn) discard() {
	if c.p != nil {
		c.p.batch = pgx.Batch{}
	}
}

// pgTx is a transaction of a pgConn: its queued statements are sent before
// it commits and dropped when it rolls back.
type pgTx struct {
	driver.Tx
	c pgConn
}

func (t pgTx) Commit() error {
	if err := t.c.flush(context.Background()); err != nil {
		_ = t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

func (t pgTx) Rollback() error {
	t.c.discard()
	return t.Tx.Rollback()
}
