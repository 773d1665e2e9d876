package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// Live pages across instances (issue 23). On a PostgreSQL store several
// instances serve one database: a page served by one follows a backfill
// whose runs another executes. Each instance's broker passes its
// publications on as notifications (db.NotifyLive: one channel, the
// payload the origin instance and the topics), coalesced — at most one
// notification each relayNotifyEvery, whatever the publications in
// between — and republishes the others' locally (never echoing its own).
// While its listening connection is down it polls the events written
// since the last it knew of (each relayPoll) and publishes their
// backfills, and it reconnects. SQLite is one instance: no relay runs.

var (
	// relayNotifyEvery bounds how often an instance notifies.
	relayNotifyEvery = 20 * time.Millisecond
	// relayPoll is the poll's period while the listening connection is down.
	relayPoll = time.Second
	// relayCheckpoint is how often, while listening, the relay notes the
	// newest event id, from which a poll starts after the connection fails.
	relayCheckpoint = 5 * time.Second
)

// relay connects a broker to the other instances through the store.
type relay struct {
	store  *db.Store
	broker *Broker
	origin string
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]bool
	kick    chan struct{}
}

func newRelay(store *db.Store, b *Broker, origin string, log *slog.Logger) *relay {
	return &relay{store: store, broker: b, origin: origin, log: log, pending: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// queue adds topics to the next notification.
func (r *relay) queue(topics []string) {
	r.mu.Lock()
	for _, t := range topics {
		r.pending[t] = true
	}
	if len(topics) == 0 {
		r.pending[TopicAll] = true
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// take empties the queue: the payloads of its notifications, each under
// db.MaxNotifyPayload bytes ("origin topic topic …").
func (r *relay) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	var b strings.Builder
	for t := range r.pending {
		if b.Len() > 0 && b.Len()+1+len(t) > db.MaxNotifyPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(r.origin)
		}
		if t != TopicAll {
			b.WriteByte(' ')
			b.WriteString(t)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	clear(r.pending)
	return out
}

// notify sends the queued topics until ctx ends.
func (r *relay) notify(ctx context.Context) {
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		for _, p := range r.take() {
			err := r.store.NotifyLive(ctx, p)
			if err != nil && ctx.Err() == nil {
				// Once more: a connection from before a restart fails once.
				err = r.store.NotifyLive(ctx, p)
			}
			if err != nil && ctx.Err() == nil && !failing {
				r.log.Warn("live changes not sent to the other instances (their pages poll meanwhile)", "err", err)
			}
			failing = err != nil
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(relayNotifyEvery):
		}
	}
}

// receive republishes the other instances' publications locally until
// ctx ends: through the listening connection while it holds, by polling
// the events while it does not.
func (r *relay) receive(ctx context.Context) {
	last, err := r.store.LastEventID(ctx)
	for err != nil && ctx.Err() == nil {
		r.log.Warn("live changes: cannot read the events; trying again", "err", err)
		sleepCtx(ctx, relayPoll)
		last, err = r.store.LastEventID(ctx)
	}
	down := false
	for ctx.Err() == nil {
		l, err := r.store.ListenLive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !down {
				r.log.Warn("live changes: cannot listen to the other instances; polling the events each second meanwhile", "err", err)
				down = true
			}
			last = r.poll(ctx, last)
			sleepCtx(ctx, relayPoll)
			continue
		}
		if down {
			r.log.Info("live changes: listening to the other instances again")
			down = false
		}
		// What happened while nobody listened.
		last = r.poll(ctx, last)
		last = r.listen(ctx, l, last)
		l.Close()
	}
}

// listen republishes the notifications of l until it fails or ctx ends;
// it returns the event id from which a poll catches up then.
func (r *relay) listen(ctx context.Context, l *db.LiveListener, last int64) int64 {
	next := last // noted at the previous checkpoint: older events were told
	at := time.Now()
	for {
		p, err := l.Wait(ctx, relayCheckpoint)
		if ctx.Err() != nil {
			return last
		}
		if err != nil && !errors.Is(err, db.ErrNoNotification) {
			r.log.Warn("live changes: the listening connection failed; polling meanwhile", "err", err)
			return last
		}
		if err == nil {
			r.republish(p)
		}
		if time.Since(at) >= relayCheckpoint {
			if id, err := r.store.LastEventID(ctx); err == nil {
				last, next, at = next, id, time.Now()
			}
		}
	}
}

// republish publishes locally the topics of another instance's payload.
func (r *relay) republish(payload string) {
	f := strings.Fields(payload)
	if len(f) == 0 || f[0] == r.origin {
		return
	}
	r.broker.publishLocal(f[1:]...)
}

// poll publishes the backfills of the events after last and returns the
// last event id read.
func (r *relay) poll(ctx context.Context, last int64) int64 {
	for ctx.Err() == nil {
		subjects, id, err := r.store.EventSubjectsSince(ctx, last, 5000)
		if err != nil {
			return last
		}
		if len(subjects) == 0 {
			return id
		}
		var topics []string
		for _, s := range subjects {
			if b := db.BackfillOfSubject(s); b != "" {
				topics = append(topics, b)
			}
		}
		r.broker.publishLocal(topics...)
		last = id
	}
	return last
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
