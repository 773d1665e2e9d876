package handlers

import (
	"context"
	"errors"
	"sync"
	"time"
)

// recentMemo shares a value among the requests of the ttl after it was
// computed, by key: many viewers of the same running backfill refresh the
// same aggregates at once, and each one computing them again is what made
// those pages cost the engine its CPU. A request that finds the value being
// computed waits for it instead of computing it too. The key carries what
// must be shown at once (a backfill's state version, say); what it leaves
// out may be up to ttl late. The zero value, with ttl set, is ready.
type recentMemo[K comparable, V any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[K]*recentValue[V]
}

type recentValue[V any] struct {
	done chan struct{} // closed once v and err are set
	at   time.Time     // when its computation started (what it reads is as old)
	v    V
	err  error
}

// maxRecent bounds the values kept: beyond, expired ones are dropped.
const maxRecent = 1024

// get returns key's value computed less than ttl ago, or computes it with
// compute. An error is not kept: a request that waited for a computation
// that failed (its own request canceled, say) computes the value itself.
func (r *recentMemo[K, V]) get(ctx context.Context, key K, compute func() (V, error)) (V, error) {
	now := time.Now()
	r.mu.Lock()
	if r.m == nil {
		r.m = map[K]*recentValue[V]{}
	}
	if e, ok := r.m[key]; ok {
		select {
		case <-e.done:
			if e.err == nil && now.Sub(e.at) < r.ttl {
				r.mu.Unlock()
				return e.v, nil
			}
		default: // being computed: wait for it
			r.mu.Unlock()
			select {
			case <-e.done:
				if e.err == nil {
					return e.v, nil
				}
				return compute()
			case <-ctx.Done():
				var zero V
				return zero, ctx.Err()
			}
		}
	}
	if len(r.m) >= maxRecent {
		for k, old := range r.m {
			select {
			case <-old.done:
				if now.Sub(old.at) >= r.ttl {
					delete(r.m, k)
				}
			default:
			}
		}
	}
	e := &recentValue[V]{done: make(chan struct{}), at: now}
	r.m[key] = e
	r.mu.Unlock()
	defer func() {
		if e.err != nil {
			r.mu.Lock()
			if r.m[key] == e {
				delete(r.m, key)
			}
			r.mu.Unlock()
		}
		close(e.done)
	}()
	e.err = errComputing // until compute returns (a panic leaves it set)
	e.v, e.err = compute()
	return e.v, e.err
}

// errComputing is the error of a value whose computation did not return.
var errComputing = errors.New("the shared value was not computed")
