package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// PostgreSQL connections. The store's SQL is written once, with SQLite's
// ? placeholders and 0/1 integers for booleans; a PostgreSQL connection of
// the store (pgConn) rebinds every statement's ? to $1, $2, … (outside
// quotes and comments, pgRebind) and passes Go bools as 0/1, so the
// statements that both dialects understand need no switch. Those that
// differ ask the store's dialect (s.dialect, or dialectOf(tx)).

// UnreachableError is a PostgreSQL server that did not answer when the
// store opened: Err is pgx's reason (host, port, user, database; never the
// password), After how long the store waited for it.
type UnreachableError struct {
	Err   error
	After time.Duration
}

func (e *UnreachableError) Error() string { return "PostgreSQL unreachable: " + e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// SQLState is the SQLSTATE the server refused the connection with ("" when
// it did not answer): 3D000 no such database, 28P01 / 28000 the user's
// authentication failed or is not allowed.
func (e *UnreachableError) SQLState() string { return pgCode(e.Err) }

// Target is where the connection went: the server (host:port), the user
// and the database ("" each when pgx did not say).
func (e *UnreachableError) Target() (server, user, database string) {
	var ce *pgconn.ConnectError
	if !errors.As(e.Err, &ce) || ce.Config == nil {
		return "", "", ""
	}
	return net.JoinHostPort(ce.Config.Host, strconv.Itoa(int(ce.Config.Port))), ce.Config.User, ce.Config.Database
}

// Failure is why the connection failed when the server did not answer
// (SQLState ""), for the caller to word:
//   - FailureRefused: nothing listens at the address (connection refused);
//   - FailureTimeout: no answer within PingTimeout (or the URL's
//     connect_timeout): After says how long;
//   - FailureNoHost: the host name does not resolve (no such host, or
//     no answer from this machine's DNS);
//   - FailureOther: anything else (Cause has its text).
func (e *UnreachableError) Failure() UnreachableFailure {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(e.Err, &dns):
		return FailureNoHost
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return FailureRefused
	case errors.Is(e.Err, context.DeadlineExceeded), errors.As(e.Err, &ne) && ne.Timeout():
		return FailureTimeout
	}
	return FailureOther
}

// UnreachableFailure: see UnreachableError.Failure.
type UnreachableFailure int

// The failures of UnreachableError.Failure.
const (
	FailureOther UnreachableFailure = iota
	FailureRefused
	FailureTimeout
	FailureNoHost
)

// Cause is the innermost reason pgx gives, once: pgx repeats the same
// reason for each address it tried (with sslmode prefer, once with TLS and
// once without), each on a line of its own.
func (e *UnreachableError) Cause() string {
	err := e.Err
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[len(errs)-1]
			}
		}
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// PingTimeout bounds how long opening a PostgreSQL store waits for the
// server's first answer.
const PingTimeout = 10 * time.Second

// openPostgres opens the pool at url: readOnly makes every transaction of
// its connections read-only (the reader pool, as SQLite's query_only),
// counted counts their statements (CountReads).
func openPostgres(url string, readOnly, counted bool) (*sqlx.DB, error) {
	cfg, err := utcConfig(url)
	if err != nil {
		return nil, err
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	// Every statement planned for its arguments and the tables' size
	// now. pgx prepares each statement once per connection, and after five
	// executions PostgreSQL may keep a generic plan made while the tables
	// were small: a large backfill then read runs and attempts by
	// sequential scans to its end (its runs table grows from none to
	// thousands of rows within seconds, before autovacuum analyzes it).
	// Measured on 1,000,000 partitions: 21.7 s with cached plans, 16.9 s
	// without. A connection string that sets the parameter keeps its own.
	if _, ok := cfg.RuntimeParams["plan_cache_mode"]; !ok {
		cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	d := sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg), counted})
	return sqlx.NewDb(d, "pgx"), nil
}

// utcConfig is the connection string url parsed, its sessions in UTC
// (whatever url says).
func utcConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	// Times are Unix milliseconds in BIGINT columns, never timestamps: the
	// session's zone changes nothing, but keep it fixed all the same.
	cfg.RuntimeParams["timezone"] = "UTC"
	return cfg, nil
}

// connectOne opens one plain pgx connection with cfg (no pool, no
// rebinding of ? placeholders), waiting at most PingTimeout for it and for
// what ready (nil: nothing) then does on it; a failed ready closes it.
func connectOne(ctx context.Context, cfg *pgx.ConnConfig, ready func(ctx context.Context, c *pgx.Conn) error) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	c, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	if ready != nil {
		if err := ready(cctx, c); err != nil {
			c.Close(context.Background())
			return nil, err
		}
	}
	return c, nil
}

// plainPostgres is a connection pool at url without the store's rebinding
// (pgConn): goose's own statements, with $n placeholders and true
// booleans, run through it.
func plainPostgres(url string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	return stdlib.OpenDB(*cfg), nil
}

// migratePostgres applies PostgreSQL's pending migrations at url.
func migratePostgres(url string) error {
	d, err := plainPostgres(url)
	if err != nil {
		return err
	}
	defer d.Close()
	d.SetMaxOpenConns(1)
	return migrate(d, Postgres)
}

// pgConnector opens pgConns.
type pgConnector struct {
	driver.Connector
	counted bool
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return pgConn{conn.(*stdlib.Conn), c.counted, &pipeline{}}, nil
}

// pgConn is a pgx connection (every method of it, so that database/sql
// sees the same interfaces) that rebinds ? placeholders and bool
// arguments.
type pgConn struct {
	*stdlib.Conn
	counted bool
	p       *pipeline // statements queued by execLater (postgres_pipeline.go)
}

func (c pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if c.counted {
		countRead(ctx)
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	rows, err := c.Conn.QueryContext(ctx, pgRebind(q), pgArgs(args))
	return rows, c.badConn(err)
}

func (c pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if c.counted {
		countRead(ctx)
	}
	q, args = pgRebind(q), pgArgs(args) // once: a step's statements are long
	if c.queue(ctx, q, args) {
		return queuedResult{}, nil
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	res, err := c.Conn.ExecContext(ctx, q, args)
	return res, c.badConn(err)
}

func (c pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.discard()
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.badConn(err)
	}
	return pgTx{tx, c}, nil
}

// badConn turns the error of a statement that found its connection ended
// by the server (PostgreSQL restarted or terminated it: the server sent
// its FATAL before the statement arrived, so it did not run) into
// driver.ErrBadConn outside a transaction, so that database/sql runs it
// again on a new connection instead of failing once for each connection
// pooled before a restart.
func (c pgConn) badConn(err error) error {
	if err == nil || !c.Conn.Conn().IsClosed() {
		return err
	}
	switch pgCode(err) {
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return driver.ErrBadConn
	}
	return err
}

func (c pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if c.counted {
		countRead(ctx)
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	st, err := c.Conn.PrepareContext(ctx, pgRebind(q))
	if err != nil {
		return nil, err
	}
	return pgStmt{st.(*stdlib.Stmt), c}, nil
}

func (c pgConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// pgStmt is a prepared statement of a pgConn: its arguments are rebound
// as the connection's.
type pgStmt struct {
	*stdlib.Stmt
	c pgConn
}

func (s pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.flush(ctx); err != nil {
		return nil, err
	}
	return s.Stmt.ExecContext(ctx, pgArgs(args))
}

func (s pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.flush(ctx); err != nil {
		return nil, err
	}
	return s.Stmt.QueryContext(ctx, pgArgs(args))
}

// pgArgs passes Go bools as the 0/1 integers the schema stores them as.
func pgArgs(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if b, ok := a.Value.(bool); ok {
			if b {
				args[i].Value = int64(1)
			} else {
				args[i].Value = int64(0)
			}
		}
	}
	return args
}

// pgRebind turns the ? placeholders of q into $1, $2, … (and ?NNN into
// $NNN), leaving alone
// those inside string literals, quoted identifiers, dollar-quoted strings
// and comments. A statement without ? is returned as it is.
func pgRebind(q string) string {
	if strings.IndexByte(q, '?') < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(q))
			b.WriteString(q[i:j])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
		case c == '$':
			// $tag$ … $tag$ (a dollar-quoted string), or $n left as it is.
			j := i + 1
			for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			if j < len(q) && q[j] == '$' && !(j > i+1 && q[i+1] >= '0' && q[i+1] <= '9') {
				tag := q[i : j+1]
				k := strings.Index(q[j+1:], tag)
				end := len(q)
				if k >= 0 {
					end = j + 1 + k + len(tag)
				}
				b.WriteString(q[i:end])
				i = end
				continue
			}
			b.WriteString(q[i:j])
			i = j
		case c == '?':
			// ?NNN (SQLite's numbered parameter) is $NNN; ? the next one.
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(q[i+1 : j])
			} else {
				n++
				b.WriteString(strconv.Itoa(n))
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// pgTypedRow is row (a VALUES row of ? placeholders) with each ? cast to
// the PostgreSQL type of its argument in args: PostgreSQL types the
// columns of a VALUES list from its first row, and a bare parameter there
// is text.
func pgTypedRow(row string, args []any) string {
	var b strings.Builder
	k := 0
	for i := 0; i < len(row); i++ {
		b.WriteByte(row[i])
		if row[i] != '?' || k >= len(args) {
			continue
		}
		switch args[k].(type) {
		case int, int64, int32, int16, int8, uint32, uint16, uint8, bool, *int64, *int:
			b.WriteString("::BIGINT")
		case float64, float32, *float64:
			b.WriteString("::DOUBLE PRECISION")
		case string, *string:
			b.WriteString("::TEXT")
		case []byte:
			b.WriteString("::BYTEA")
		}
		k++
	}
	return b.String()
}

// pgAliasValues names the VALUES list that suffix closes (its first ")"):
// PostgreSQL wants a subquery in FROM named. The columns keep their
// names, column1, column2, …
func pgAliasValues(suffix string) string {
	i := strings.IndexByte(suffix, ')')
	if i < 0 || strings.HasPrefix(suffix[i+1:], " AS ") {
		return suffix // none, or named already (UPDATE … FROM (VALUES …) AS v)
	}
	return suffix[:i+1] + " AS v" + suffix[i+1:]
}

// pgCode is the SQLSTATE of a PostgreSQL error ("" for another error).
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pingPostgres checks that the server answers, as an UnreachableError
// when it does not.
func pingPostgres(d *sqlx.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), PingTimeout)
	defer cancel()
	start := time.Now()
	if err := d.PingContext(ctx); err != nil {
		return &UnreachableError{Err: err, After: time.Since(start)}
	}
	return nil
}

// Dialect is the store's SQL dialect.
func (s *Store) Dialect() Dialect { return s.dialect }

// dialectOf is the dialect of the transaction tx (Store.Tx's).
func dialectOf(tx *sqlx.Tx) Dialect {
	if tx.DriverName() == "pgx" {
		return Postgres
	}
	return SQLite
}

// insertID runs the INSERT q (of a table whose key is the integer id) in
// tx and answers the new row's id: SQLite's last insert rowid, or the id
// PostgreSQL returns (pgx's driver has no LastInsertId).
func insertID(ctx context.Context, tx *sqlx.Tx, q string, args ...any) (int64, error) {
	if dialectOf(tx) == Postgres {
		var id int64
		err := tx.GetContext(ctx, &id, q+` RETURNING id`, args...)
		return id, err
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// greatest is the scalar maximum of dialect d: SQLite's MAX(a, b),
// PostgreSQL's GREATEST(a, b) (which ignores NULLs where MAX answers
// NULL: the store passes it none).
func greatest(d Dialect) string {
	if d == Postgres {
		return "GREATEST"
	}
	return "MAX"
}

// indexedBy is SQLite's INDEXED BY index for a query of dialect d, where
// the store tells SQLite's planner which index to take; PostgreSQL's
// planner chooses by itself ("").
func indexedBy(d Dialect, index string) string {
	if d == Postgres {
		return ""
	}
	return " INDEXED BY " + index
}

// rangesJoin is, for dialect d, the FROM clause that joins the index
// ranges of a JSON parameter ([[lo, hi], …], r) with partition_status ps
// through its covering staleness index, and the condition that keeps the
// rows of each range.
func rangesJoin(d Dialect) (from, within string) {
	if d == Postgres {
		return `jsonb_array_elements(CAST(? AS jsonb)) AS r(value) CROSS JOIN partition_status ps`,
			`ps.idx BETWEEN CAST(r.value->>0 AS BIGINT) AND CAST(r.value->>1 AS BIGINT)`
	}
	return `json_each(?) r CROSS JOIN partition_status ps INDEXED BY partition_status_staleness`,
		`ps.idx BETWEEN json_extract(r.value, '$[0]') AND json_extract(r.value, '$[1]')`
}

// randomGen is a random 64-bit integer of dialect d, per row: SQLite's
// random(), and on PostgreSQL (whose random() is a float in [0, 1)) 53
// random bits.
func randomGen(d Dialect) string {
	if d == Postgres {
		return `CAST(floor(random() * 9007199254740992) AS BIGINT)`
	}
	return `random()`
}

// jsonTexts is, for dialect d, a table of the strings of a JSON array
// parameter, its column named value.
func jsonTexts(d Dialect) string {
	if d == Postgres {
		return `jsonb_array_elements_text(CAST(? AS jsonb))`
	}
	return `json_each(?)`
}

// tickKey is the column that picks schedule ticks by row: SQLite's rowid
// (the ticks' table has one), PostgreSQL's id (their key).
func tickKey(d Dialect) string {
	if d == Postgres {
		return "id"
	}
	return "rowid"
}
