package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"
)

// WriteCause says why the database cannot be written.
type WriteCause string

// The causes of a write fault (the codes handlers word for users).
const (
	CauseDiskFull WriteCause = "disk_full" // SQLITE_FULL: the disk (or max_page_count) is full
	CauseLocked   WriteCause = "locked"    // SQLITE_BUSY/LOCKED: another process holds the write lock
	CauseReadOnly WriteCause = "read_only" // SQLITE_READONLY: the file, its directory or the mount is read-only
	CauseIOError  WriteCause = "io_error"  // SQLITE_IOERR: the disk failed a read or write
)

// WriteCauses lists every cause (for metrics that show all of them).
var WriteCauses = []WriteCause{CauseDiskFull, CauseLocked, CauseReadOnly, CauseIOError}

// WriteError is a write the database refused for a reason outside the
// command (the disk, the file, another process): the command wrote nothing
// (its transaction was rolled back) and may succeed once the cause is gone.
// Since is when the store's current spell of write faults began.
type WriteError struct {
	Cause WriteCause
	Since time.Time
	Err   error // the driver's error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("the database cannot be written (%s): %v", e.Cause, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// classifyWrite returns the cause of a write fault, "" for any other error
// (a constraint, a bad statement, a canceled context).
func classifyWrite(err error) WriteCause {
	switch code := pgCode(err); {
	case code == "53100": // disk_full
		return CauseDiskFull
	case code == "25006": // read_only_sql_transaction (a standby)
		return CauseReadOnly
	case code == "58030": // io_error
		return CauseIOError
	case code != "":
		return ""
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code {
	case sqlite3.ErrFull:
		return CauseDiskFull
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return CauseLocked
	case sqlite3.ErrReadonly:
		return CauseReadOnly
	case sqlite3.ErrIoErr, sqlite3.ErrCantOpen:
		return CauseIOError
	}
	return ""
}

// WriteHealth is the store's write state. While Failing, the last write
// failed for Cause and none has succeeded since Since.
type WriteHealth struct {
	Failing bool
	Cause   WriteCause
	Since   time.Time // first failure of the spell
	Last    time.Time // latest failure
}

// writeHealth is the state behind Store.WriteHealth: set by a write that
// fails for a WriteCause, cleared by a probe write that succeeds (a probe
// runs every probeEvery while failing).
type writeHealth struct {
	mu      sync.Mutex
	state   WriteHealth
	probing bool
	hold    time.Duration // 0: DefaultFaultHold
	// refuse makes writes fail at once, without waiting: set while another
	// process holds the lock (each write would wait the busy timeout, one
	// after another on the single writer), until a probe gets through.
	refuse   bool
	failures [4]atomic.Uint64 // by index in WriteCauses
	probes   atomic.Int64     // probe writes tried (tests watch them)
}

// DefaultFaultHold is how long a store that failed a write stays reported
// failing after its last failed write, even when probe writes succeed: a
// nearly full disk has room for a probe (it reuses the space of the WAL)
// but not for the next real command, and readiness and the banner must not
// flap between the two.
const DefaultFaultHold = 30 * time.Second

// SetFaultHold changes DefaultFaultHold for this store (tests that watch a
// recovery).
func (s *Store) SetFaultHold(d time.Duration) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	s.health.hold = d
}

// probeEvery is how often a failing store tries a probe write.
var probeEvery = time.Second

// WriteHealth reports whether writes currently fail, why and since when.
func (s *Store) WriteHealth() WriteHealth {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.state
}

// WriteFailures reports how many writes failed for each cause since the
// store was opened (probe writes not counted).
func (s *Store) WriteFailures() map[WriteCause]uint64 {
	out := make(map[WriteCause]uint64, len(WriteCauses))
	for i, c := range WriteCauses {
		out[c] = s.health.failures[i].Load()
	}
	return out
}

// writeFailed records err if it is a write fault and returns it as a
// *WriteError; any other error is returned as it is.
func (s *Store) writeFailed(err error) error {
	cause := classifyWrite(err)
	if cause == "" {
		return err
	}
	s.countFailure(cause)
	return s.noteFault(cause, err)
}

// countFailure counts a write refused for cause (WriteFailures).
func (s *Store) countFailure(cause WriteCause) {
	for i, c := range WriteCauses {
		if c == cause {
			s.health.failures[i].Add(1)
		}
	}
}

func (s *Store) noteFault(cause WriteCause, err error) *WriteError {
	now := time.Now()
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.state.Failing {
		h.state = WriteHealth{Failing: true, Since: now}
	}
	h.state.Cause, h.state.Last = cause, now
	h.refuse = cause == CauseLocked
	if !h.probing {
		h.probing = true
		go s.probeUntilWritable()
	}
	return &WriteError{Cause: cause, Since: h.state.Since, Err: err}
}

// probeUntilWritable tries a probe write every probeEvery until one
// succeeds at least the fault hold after the last failed write, then clears
// the failing state: writes resume by themselves when
// the cause goes (space freed, the other process's lock released), and what
// reports the state (readiness, the page banner) follows without waiting for
// a command to succeed. It stops when the store is closed.
func (s *Store) probeUntilWritable() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		err := s.probeWrite(context.Background())
		h := &s.health
		h.probes.Add(1)
		h.mu.Lock()
		hold := h.hold
		if hold == 0 {
			hold = DefaultFaultHold
		}
		if err == nil && time.Since(h.state.Last) >= hold {
			h.state, h.probing, h.refuse = WriteHealth{}, false, false
			h.mu.Unlock()
			return
		}
		if err == nil {
			// The lock (if that was it) is gone: writes are tried again
			// (see Tx), though the spell is reported until the hold ends.
			h.refuse = false
		}
		if cause := classifyWrite(err); cause != "" {
			h.state.Cause = cause
		}
		h.mu.Unlock()
	}
}

// refusing is the *WriteError of a write refused at once while the
// database is locked by another process (nil otherwise).
// writesRefused reports whether writes are refused now, without counting
// a refusal (for background writes that may be skipped).
func (s *Store) writesRefused() bool {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.refuse
}

func (s *Store) refusing() error {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.refuse {
		return nil
	}
	s.countFailure(CauseLocked)
	h.state.Last = time.Now()
	return &WriteError{Cause: CauseLocked, Since: h.state.Since, Err: errors.New("another process holds the database's write lock")}
}

// probeMaxPages bounds the probe's size.
const probeMaxPages = 256

// probeWrite commits a write that needs pages the database does not have
// free (more than its free list, up to probeMaxPages): an update in place
// may succeed on a full disk, the command that failed needed room. It
// leaves nothing behind but free pages.
func (s *Store) probeWrite(ctx context.Context) error {
	if s.dialect == Postgres {
		// No page counts to size it by: a row of 64 KiB, written and
		// deleted.
		return s.probePostgres(ctx)
	}
	var free, size int64
	if err := s.r.GetContext(ctx, &free, `PRAGMA freelist_count`); err != nil {
		return err
	}
	if err := s.r.GetContext(ctx, &size, `PRAGMA page_size`); err != nil {
		return err
	}
	n := (min(free, probeMaxPages) + 1) * size
	tx, err := s.writer(ctx).BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := probeRows(ctx, tx, n); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *Store) probePostgres(ctx context.Context) error {
	tx, err := s.writer(ctx).BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('write_probe', repeat('x', 65536))
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`); err != nil {
		_ = tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE name = 'write_probe'`); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func probeRows(ctx context.Context, tx *sqlx.Tx, n int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('write_probe', zeroblob(?))
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, n); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE name = 'write_probe'`)
	return err
}
