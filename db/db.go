package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations: migrations/sqlite holds SQLite's history (1 to 25),
// migrations/postgres PostgreSQL's schema at version 25 and its own files
// where the dialects differ; migrations/*.sql (from 26 on) are shared. A
// dialect's migrations are its own folder's and the shared ones
// (migrationFS).
//
//go:embed migrations
var migrations embed.FS

// Store is the database. w has exactly one connection and serialises writes;
// r is a pool of read-only connections that never wait on the writer (WAL).
// Both stay inside db: everything else asks the Store's methods.
type Store struct {
	w *sqlx.DB
	r *sqlx.DB
	// leases is the pool of the instance's heartbeat and leader lease
	// (PostgreSQL: a connection of its own, so that they never wait behind
	// a step that waits for the other instances' steps; SQLite: w).
	leases *sqlx.DB
	// Path is the SQLite file ("" on PostgreSQL).
	Path    string
	loc     Location
	dialect Dialect

	health writeHealth // see WriteHealth
	reach  reachHealth // see Unreachable
	// readWriterUses counts writer uses on behalf of reads (writer_uses.go).
	readWriterUses atomic.Int64
	closed         chan struct{}
	closeOnce      sync.Once
	// urgent counts the writes waiting that go before the controller's
	// next step (writer_priority.go).
	urgent urgency
	// live is the connection for NOTIFY (PostgreSQL, live_notify.go).
	live liveConns
	// betweenReads, when a test sets it, runs between a reader's reads
	// of status rows and of status ranges (staleness fact loads,
	// LastAttemptStatus, MaterializedByOthers, PartitionHistoryAt).
	betweenReads func()
}

// Querier reads: the reader pool (Store.Reader) or a write transaction
// (Tx). The functions of this package that take one answer the same
// question inside the engine's transaction or outside it.
type Querier interface {
	GetContext(ctx context.Context, dest any, q string, args ...any) error
	SelectContext(ctx context.Context, dest any, q string, args ...any) error
}

// Tx is the write transaction Store.Tx runs its function in; pass it to
// this package's functions that take a transaction or a Querier.
type Tx = sqlx.Tx

// Reader is the read-only pool, for this package's functions that take a
// Querier.
func (s *Store) Reader() Querier { return s.r }

// Options tune OpenWith.
type Options struct {
	// PageSize is the page size in bytes (a power of two from 512 to
	// 65,536) of a SQLite database this open creates; 0: SQLite's
	// default (4,096). A database that exists keeps its own.
	PageSize int
	// BusyTimeout is how long a write waits for another process's write
	// lock before it fails as CauseLocked (default DefaultBusyTimeout).
	BusyTimeout time.Duration
}

// DefaultBusyTimeout is how long a write waits for another process's lock.
const DefaultBusyTimeout = 10 * time.Second

func dsn(path string, readOnly bool, busy time.Duration) string {
	q := url.Values{}
	q.Set("_foreign_keys", "on")
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	if readOnly {
		q.Set("_query_only", "true")
	} else {
		// The writer runs the same statements over and over (the backfill
		// engine's multi-row inserts and updates are long to parse): keep
		// them prepared.
		q.Set("_stmt_cache_size", "128")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the store at location (a --db value,
// ParseLocation: a SQLite file or a postgres:// URL) and applies every
// pending migration.
func Open(location string) (*Store, error) { return OpenWith(location, Options{}) }

// OpenWith is Open with options.
func OpenWith(location string, opt Options) (*Store, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	return OpenLocation(loc, opt)
}

// OpenLocation opens the store at loc. A PostgreSQL server that does not
// answer is an *UnreachableError.
func OpenLocation(loc Location, opt Options) (*Store, error) {
	if loc.Dialect == Postgres {
		return openPostgresStore(loc)
	}
	path := loc.Path
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	if opt.PageSize > 0 {
		createWithPageSize(path, opt.PageSize)
	}
	w, err := sqlx.Open(writerDriverName, dsn(path, false, busy))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.Ping(); err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := migrate(w.DB, SQLite); err != nil {
		w.Close()
		return nil, err
	}
	r := openReader(dsn(path, true, busy))
	n := max(4, 2*runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	return &Store{w: w, r: r, Path: path, loc: loc, closed: make(chan struct{})}, nil
}

// openPostgresStore opens the PostgreSQL database at loc. The writer is
// one connection, as SQLite's: the store's writes stay serialised within
// the process, as everything above the store expects (several processes
// on one database coordinate through PostgreSQL's locks, issue 23). The
// readers are a pool of read-only connections.
func openPostgresStore(loc Location) (*Store, error) {
	w, err := openPostgres(loc.URL, false, false)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	if err := pingPostgres(w); err != nil {
		w.Close()
		return nil, err
	}
	if err := migratePostgres(loc.URL); err != nil {
		w.Close()
		return nil, err
	}
	r, err := openPostgres(loc.URL, true, true)
	if err != nil {
		w.Close()
		return nil, err
	}
	n := max(4, 2*runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	leases, err := openPostgres(loc.URL, false, false)
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	leases.SetMaxOpenConns(1)
	leases.SetMaxIdleConns(1)
	return &Store{w: w, r: r, leases: leases, loc: loc, dialect: Postgres, closed: make(chan struct{})}, nil
}

// Location is where the store lives.
func (s *Store) Location() Location { return s.loc }

// migrationFS is the migrations of one dialect: its folder's files, then
// the shared ones (a name in both is the dialect's).
type migrationFS struct{ layers []fs.FS }

func (m migrationFS) Open(name string) (fs.File, error) {
	for _, l := range m.layers {
		if f, err := l.Open(name); err == nil {
			return f, nil
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m migrationFS) Glob(pattern string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, l := range m.layers {
		names, err := fs.Glob(l, pattern)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// migrator applies the embedded migrations of dialect d to db. It is
// goose's Provider, which holds no global state: stores opened at once
// (parallel tests, a server and a CLI command in one process) do not race
// on goose's package settings.
func migrator(d *sql.DB, dialect Dialect) (*goose.Provider, error) {
	shared, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	own, err := fs.Sub(migrations, "migrations/"+dialect.String())
	if err != nil {
		return nil, err
	}
	fsys := migrationFS{[]fs.FS{own, shared}}
	if dialect == Postgres {
		// Instances started together on a new database (a compose file)
		// migrate it one at a time: goose's session advisory lock, polled
		// every second for at most five minutes; the others then find
		// nothing left to apply.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		if err != nil {
			return nil, err
		}
		return goose.NewProvider(goose.DialectPostgres, d, fsys, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(goose.DialectSQLite3, d, fsys, goose.WithGoMigrations(goMigrations()...))
}

func migrate(d *sql.DB, dialect Dialect) error {
	p, err := migrator(d, dialect)
	if err != nil {
		return err
	}
	if err := checkNotNewer(context.Background(), p); err != nil {
		return err
	}
	if _, err := p.Up(context.Background()); err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	return nil
}

// MarkSchemaNewerForTest records in the goose table a migration by
// versions past the applied one, as a newer tessera would have left it, and
// answers that version and the one before: for the tests of a database a
// newer binary migrated (db, cli); nothing else may call it.
func (s *Store) MarkSchemaNewerForTest(by int64) (newer, applied int64, err error) {
	if applied, err = s.MigrationVersion(); err != nil {
		return 0, 0, err
	}
	newer = applied + by
	_, err = s.writer(context.Background()).Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, TRUE)`, newer)
	return newer, applied, err
}

// MigrationVersion reports the applied schema version.
func (s *Store) MigrationVersion() (int64, error) {
	if s.dialect == Postgres {
		d, err := plainPostgres(s.loc.URL)
		if err != nil {
			return 0, err
		}
		defer d.Close()
		p, err := migrator(d, Postgres)
		if err != nil {
			return 0, err
		}
		return p.GetDBVersion(context.Background())
	}
	p, err := migrator(s.w.DB, s.dialect)
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(context.Background())
}

// Close closes both pools.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.waitPersisted()
	caches.Delete(s)
	var lerr error
	if s.leases != nil && s.leases != s.w {
		lerr = s.leases.Close()
	}
	return errors.Join(s.live.close(), s.r.Close(), s.w.Close(), lerr)
}

// Ping checks that the database answers a query. (A pooled PostgreSQL
// connection from before a restart is replaced: pgConn.badConn.)
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.r.GetContext(ctx, &one, "SELECT 1")
}

// Tx runs fn in one write transaction (BEGIN IMMEDIATE) and commits it. A
// write the database refuses (disk full, locked, read-only, I/O error) is
// returned as a *WriteError and recorded in WriteHealth; the transaction is
// rolled back, so nothing of the command is written.
func (s *Store) Tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	if err := s.refusing(); err != nil {
		return err
	}
	// The writer's one connection first, then the check again: writes
	// queued behind one that found the database locked are refused at once
	// instead of each waiting the busy timeout in turn.
	conn, err := s.writer(ctx).Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := s.refusing(); err != nil {
		return err
	}
	var pc pgConn
	var isPG bool
	if s.dialect == Postgres {
		pc, isPG = pgConnOf(conn)
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return s.writeFailed(err)
	}
	if isPG {
		txConns.Store(tx, pc) // for COPY (status_copy.go)
		defer txConns.Delete(tx)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.writeFailed(err)
	}
	if err := tx.Commit(); err != nil {
		return s.writeFailed(err)
	}
	return nil
}

// EngineWriterCache is the writer's page cache while the backfill engine
// runs (KiB; SQLite's default is 2 MB).
const EngineWriterCache = 128 << 10

// EnlargeWriterCache gives the writer connection a page cache of
// EngineWriterCache KiB: the engine writes partition instances and status
// rows at random places of large indexes, and the default cache turns that
// into disk reads. The writer has one connection, so the setting sticks.
func (s *Store) EnlargeWriterCache(ctx context.Context) error {
	if s.dialect == Postgres {
		return nil // the server's shared_buffers, not a connection's
	}
	_, err := s.writer(ctx).ExecContext(ctx, fmt.Sprintf(`PRAGMA cache_size = -%d`, EngineWriterCache))
	return err
}

// RawWriter and RawReader are the store's pools, for tests and diagnostics
// that look at the database's rows themselves. The application asks the
// Store's methods; TestRawHandlesStayInTests fails when non-test code
// outside db calls these.
func (s *Store) RawWriter() *sqlx.DB { return s.w }

// RawReader: see RawWriter.
func (s *Store) RawReader() *sqlx.DB { return s.r }

// Pools are the writer's and the readers' connection pools, for the
// metrics of their statistics (a collector takes the *sql.DB); the same
// rule as RawWriter holds.
func (s *Store) Pools() (writer, readers *sql.DB) { return s.w.DB, s.r.DB }

// Millis converts a time to the stored representation (Unix milliseconds).
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts a stored time back.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// WriterAutoCheckpoint is the writer's WAL auto-checkpoint threshold (pages)
// while a background checkpointer runs: the writer then rarely checkpoints
// itself, and when it does little is left to copy.
const WriterAutoCheckpoint = 16384

// StartCheckpointer copies committed WAL frames into the database file from
// a connection of its own, every interval, so that the single writer does
// not spend its commits checkpointing (PASSIVE: it never blocks the writer
// or readers). It raises the writer's auto-checkpoint threshold meanwhile;
// stop restores it and waits for the goroutine.
func (s *Store) StartCheckpointer(interval time.Duration) (stop func(), err error) {
	if s.dialect == Postgres {
		return func() {}, nil // PostgreSQL checkpoints by itself
	}
	c, err := sql.Open(driverName, dsn(s.Path, false, DefaultBusyTimeout))
	if err != nil {
		return nil, err
	}
	c.SetMaxOpenConns(1)
	if err := c.Ping(); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := s.w.Exec(fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, WriterAutoCheckpoint)); err != nil {
		c.Close()
		return nil, err
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				_, _ = c.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		c.Close()
		_, _ = s.w.Exec(`PRAGMA wal_autocheckpoint = 1000`)
	}, nil
}
