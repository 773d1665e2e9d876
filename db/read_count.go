package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"
)

// A page that reads a fixed number of queries whatever the workspace holds
// is checked by counting them: CountReads marks a context, and every
// statement the reader pool runs on behalf of a marked context (a query,
// an exec or a prepare, at the driver, so that no method can go around it)
// is counted in its ReadCount. The web layer's request contexts derive
// from the request's, so a test marks a request and counts its page.

type readCountKey struct{}

// ReadCount is how many statements the reader pool ran on behalf of a
// context marked by CountReads.
type ReadCount struct{ n atomic.Int64 }

// N is the count so far.
func (c *ReadCount) N() int64 { return c.n.Load() }

// CountReads marks ctx: the reader pool counts the statements it runs on
// behalf of ctx (and of the contexts derived from it) in the answer.
func CountReads(ctx context.Context) (context.Context, *ReadCount) {
	c := &ReadCount{}
	return context.WithValue(ctx, readCountKey{}, c), c
}

func countRead(ctx context.Context) {
	if c, ok := ctx.Value(readCountKey{}).(*ReadCount); ok {
		c.n.Add(1)
	}
}

// openReader opens the read-only pool at dsn through countingConnector.
func openReader(dsn string) *sqlx.DB {
	return sqlx.NewDb(sql.OpenDB(countingConnector{dsn: dsn, drv: tesseraDriver}), "sqlite3")
}

// countingConnector opens SQLite connections that count the statements
// run on behalf of a context marked by CountReads.
type countingConnector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return countingConn{conn.(*sqlite3.SQLiteConn)}, nil
}

func (c countingConnector) Driver() driver.Driver { return c.drv }

// countingConn is a SQLite connection (every method of it, so that
// database/sql sees the same interfaces) that counts its statements.
type countingConn struct{ *sqlite3.SQLiteConn }

func (c countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	countRead(ctx)
	return c.SQLiteConn.QueryContext(ctx, q, args)
}

func (c countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	countRead(ctx)
	return c.SQLiteConn.ExecContext(ctx, q, args)
}

func (c countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	countRead(ctx)
	return c.SQLiteConn.PrepareContext(ctx, q)
}
