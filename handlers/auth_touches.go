package handlers

import (
	"context"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// Identifying a request records, now and then, that its session or token
// was used (TouchSession, TouchToken), and forgets a session past its
// timeouts. Those are writes, and the writer has one connection, which the
// backfill engine holds a step at a time: a read (GET, HEAD; db.ForRead)
// leaves them to a goroutine, started when there is something to record
// and gone when there is nothing left, and is answered without waiting.
// A write request records them in line: it takes the writer anyway.

// laterWrites are the writes reads left to the goroutine.
type laterWrites struct {
	mu       sync.Mutex
	sessions map[string]time.Time // session id → seen at
	tokens   map[int64]time.Time  // token id → used at
	ended    map[string]time.Time // session id → found ended at
	running  bool
}

// touchSession records that session id was seen at now.
func (a *Auth) touchSession(ctx context.Context, id string, now time.Time) error {
	if !db.IsRead(ctx) {
		return a.Store.TouchSession(ctx, id, now)
	}
	a.later.add(a, func(l *laterWrites) { l.sessions = put(l.sessions, id, now) })
	return nil
}

// touchToken records that token id was used at now.
func (a *Auth) touchToken(ctx context.Context, id int64, now time.Time) error {
	if !db.IsRead(ctx) {
		return a.Store.TouchToken(ctx, id, now)
	}
	a.later.add(a, func(l *laterWrites) { l.tokens = put(l.tokens, id, now) })
	return nil
}

// endSession forgets session id, found past its timeouts at now (the
// request is answered as signed out either way).
func (a *Auth) endSession(ctx context.Context, id string, now time.Time) error {
	if !db.IsRead(ctx) {
		return a.Store.DeleteSession(ctx, id, false, now)
	}
	a.later.add(a, func(l *laterWrites) { l.ended = put(l.ended, id, now) })
	return nil
}

func put[K comparable](m map[K]time.Time, k K, at time.Time) map[K]time.Time {
	if m == nil {
		m = map[K]time.Time{}
	}
	m[k] = at
	return m
}

// add records a write with f and starts the goroutine unless it runs.
func (l *laterWrites) add(a *Auth, f func(*laterWrites)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
	if !l.running {
		l.running = true
		go l.run(a)
	}
}

// run writes what was recorded until nothing is left.
func (l *laterWrites) run(a *Auth) {
	ctx := context.Background()
	for {
		l.mu.Lock()
		sessions, tokens, ended := l.sessions, l.tokens, l.ended
		l.sessions, l.tokens, l.ended = nil, nil, nil
		if len(sessions)+len(tokens)+len(ended) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		for id, at := range sessions {
			a.laterFailed("record a session's use", a.Store.TouchSession(ctx, id, at))
		}
		for id, at := range tokens {
			a.laterFailed("record an API token's use", a.Store.TouchToken(ctx, id, at))
		}
		for id, at := range ended {
			a.laterFailed("forget an ended session", a.Store.DeleteSession(ctx, id, false, at))
		}
	}
}

// laterFailed logs a write left to the goroutine that failed for another
// reason than the database refusing writes (which WriteHealth reports).
func (a *Auth) laterFailed(what string, err error) {
	if err != nil && !isWriteFault(err) && a.Log != nil {
		a.Log.Warn("could not "+what, "err", err)
	}
}
