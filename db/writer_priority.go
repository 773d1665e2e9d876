package db

import (
	"sync"
	"time"
)

// The writer has one connection, taken in turn by the controller's steps
// and by the writes people and automation wait for: a backfill created
// through the API, a schedule's burst of ticks, a sensor's pushed events.
// database/sql hands a freed connection to any of its waiters, so a burst
// of a thousand ticks, committed a few hundred at a time, took turns with
// the controller running the ticks already launched, and 16 clients
// pushing events waited for a step of the controller before each batch.
//
// Those writes mark themselves urgent (BeginUrgent) for as long as they
// have work queued; the controller waits, before each step, until no
// urgent write is pending or at most a bound (WaitUrgent). Launching goes
// first; running what was launched catches up within that bound.

// urgency counts the urgent writers pending.
type urgency struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// BeginUrgent marks an urgent writer pending until end is called (once).
func (s *Store) BeginUrgent() (end func()) {
	u := &s.urgent
	u.mu.Lock()
	if u.n == 0 {
		u.idle = make(chan struct{})
	}
	u.n++
	u.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			u.n--
			if u.n == 0 {
				close(u.idle)
				u.idle = nil
			}
			u.mu.Unlock()
		})
	}
}

// WaitUrgent returns when no urgent writer is pending, or after at most
// max: a write that may wait (the controller's step) calls it before
// taking the writer.
func (s *Store) WaitUrgent(max time.Duration) {
	u := &s.urgent
	u.mu.Lock()
	idle := u.idle
	u.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// UrgentWriters is how many urgent writers are pending now.
func (s *Store) UrgentWriters() int {
	s.urgent.mu.Lock()
	defer s.urgent.mu.Unlock()
	return s.urgent.n
}
