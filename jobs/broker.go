package jobs

import (
	"errors"
	"sync"
)

// MaxSubscribers bounds the live-page subscriptions a broker holds at once.
const MaxSubscribers = 512

// ErrTooManySubscribers is returned by Subscribe when the broker is full.
var ErrTooManySubscribers = errors.New("too many live subscribers; reload later or use the plain links")

// TopicAll receives every publication.
const TopicAll = "*"

// Broker fans "something changed" signals out to live pages. A signal carries
// no data: subscribers re-read the projections. Each subscriber has a
// one-slot channel, so a slow reader coalesces signals instead of blocking
// the publisher or growing a queue.
type Broker struct {
	mu   sync.Mutex
	subs map[string]map[*sub]struct{}
	n    int
	max  int
	// relay, when set, passes this process's publications on to the other
	// instances (broker_relay.go).
	relay *relay
}

type sub struct{ ch chan struct{} }

// NewBroker returns an empty broker holding at most MaxSubscribers.
func NewBroker() *Broker {
	return &Broker{subs: map[string]map[*sub]struct{}{}, max: MaxSubscribers}
}

// SetMax changes the subscriber bound (tests).
func (b *Broker) SetMax(n int) {
	b.mu.Lock()
	b.max = n
	b.mu.Unlock()
}

// Subscribe registers interest in topic (a backfill id, a run id or
// TopicAll). Call cancel exactly when done; it is safe to call twice.
func (b *Broker) Subscribe(topic string) (<-chan struct{}, func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n >= b.max {
		return nil, func() {}, ErrTooManySubscribers
	}
	s := &sub{ch: make(chan struct{}, 1)}
	m := b.subs[topic]
	if m == nil {
		m = map[*sub]struct{}{}
		b.subs[topic] = m
	}
	m[s] = struct{}{}
	b.n++
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if m := b.subs[topic]; m != nil {
				if _, ok := m[s]; ok {
					delete(m, s)
					b.n--
				}
				if len(m) == 0 {
					delete(b.subs, topic)
				}
			}
		})
	}, nil
}

// Publish signals the subscribers of each topic and of TopicAll, here and,
// on a store shared by several instances, on the other instances.
func (b *Broker) Publish(topics ...string) {
	b.publishLocal(topics...)
	b.mu.Lock()
	r := b.relay
	b.mu.Unlock()
	if r != nil {
		r.queue(topics)
	}
}

// publishLocal signals this process's subscribers only (what another
// instance published).
func (b *Broker) publishLocal(topics ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range append(topics, TopicAll) {
		for s := range b.subs[t] {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

// Count is the number of live subscriptions.
func (b *Broker) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
