package db

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable says whether err means that the store cannot be reached
// now (PostgreSQL is down, restarting or shutting down, the network to it
// failed): nothing was done, and the same command may succeed once it
// answers again. Other errors (a constraint, a bad statement, a
// canceled context) are not.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	switch code := pgCode(err); {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code == "57P01", code == "57P02", code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return true
	case code != "":
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF)
}

// reachHealth is whether the last heartbeat (Heartbeat, every lease TTL/4
// while an engine runs) found the server unreachable, and since when.
type reachHealth struct {
	mu    sync.Mutex
	since time.Time // zero while it answers
}

// noteReach records a heartbeat's outcome: err that IsUnavailable starts
// (or continues) a spell, success ends it; other errors leave it.
func (s *Store) noteReach(err error) {
	h := &s.reach
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.since = time.Time{}
	case IsUnavailable(err) && h.since.IsZero():
		h.since = time.Now()
	}
}

// Unreachable says whether the store's server did not answer the last
// heartbeat, and since when (the first heartbeat that failed so): for the
// pages' banner. Always false on SQLite and without a running engine.
func (s *Store) Unreachable() (bool, time.Time) {
	s.reach.mu.Lock()
	defer s.reach.mu.Unlock()
	return !s.reach.since.IsZero(), s.reach.since
}
