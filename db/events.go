package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jmoiron/sqlx"
)

// Event is one row of the append-only audit log.
type Event struct {
	ID             int64   `db:"id" json:"id"`
	Type           string  `db:"type" json:"type"`
	Subject        string  `db:"subject" json:"subject"`
	Actor          string  `db:"actor" json:"actor"`
	Payload        string  `db:"payload" json:"-"`
	IdempotencyKey *string `db:"idempotency_key" json:"idempotency_key,omitempty"`
	At             int64   `db:"at" json:"-"`
}

// Time is the event's time.
func (e Event) Time() time.Time { return FromMillis(e.At) }

// AppendEvent writes an event inside tx. A non-empty idempotency key that was
// already used makes it return ErrDuplicateEvent.
func AppendEvent(ctx context.Context, tx *sqlx.Tx, typ, subject, actor string, payload any, idemKey string, at time.Time) (int64, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return 0, fmt.Errorf("encode event payload: %w", err)
	}
	var key *string
	if idemKey != "" {
		key = &idemKey
	}
	id, err := insertID(ctx, tx, `INSERT INTO events (type, subject, actor, payload, idempotency_key, at) VALUES (?,?,?,?,?,?)`,
		typ, subject, actor, string(b), key, Millis(at))
	if err != nil && isUniqueViolation(err) {
		return 0, ErrDuplicateEvent
	}
	return id, err
}

// EventsBySubject lists a subject's events, newest first.
func (s *Store) EventsBySubject(ctx context.Context, subject string, limit int) ([]Event, error) {
	return selectAll[Event](ctx, s.r, `SELECT * FROM events WHERE subject = ? ORDER BY id DESC LIMIT ?`, subject, limit)
}

// EventHeadsBySubject is EventsBySubject without the payloads (Payload is
// empty): a backfill's attempts events carry every partition of their
// attempts, hundreds of kilobytes each, which a timeline that already
// summarized them does not read again (EventPayloads reads the others).
func (s *Store) EventHeadsBySubject(ctx context.Context, subject string, limit int) ([]Event, error) {
	return selectAll[Event](ctx, s.r, `SELECT id, type, subject, actor, '' AS payload, idempotency_key, at
		FROM events WHERE subject = ? ORDER BY id DESC LIMIT ?`, subject, limit)
}

// EventPayloads returns the payloads of the events ids, by id.
func (s *Store) EventPayloads(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for start := 0; start < len(ids); start += 500 {
		q, args, err := sqlx.In(`SELECT id, payload FROM events WHERE id IN (?)`, ids[start:min(start+500, len(ids))])
		if err != nil {
			return nil, err
		}
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var p string
			if err := rows.Scan(&id, &p); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = p
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CountEvents counts every event (used by tests and readiness details).
func (s *Store) CountEvents(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM events`)
	return n, err
}

// EventByIdempotencyKey returns the event written with key, or ErrNotFound.
func (s *Store) EventByIdempotencyKey(ctx context.Context, key string) (Event, error) {
	return getRow[Event](ctx, s.r, ErrNotFound, `SELECT * FROM events WHERE idempotency_key = ?`, key)
}

// CappedEvent is an event whose payload was left out when over a size (Big).
type CappedEvent struct {
	Event
	Big bool `db:"big"`
}

// EventsBySubjectCapped lists a subject's events with id < before (all when
// before <= 0), newest first — a page of a timeline — without the payloads
// over maxPayload bytes (Payload empty, Big set): a backfill's attempts events
// carry every partition of their attempts, up to megabytes each, which an
// API page of 100 events would otherwise read and copy only to drop.
func (s *Store) EventsBySubjectCapped(ctx context.Context, subject string, before int64, limit, maxPayload int) ([]CappedEvent, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	return selectAll[CappedEvent](ctx, s.r, `SELECT id, type, subject, actor, idempotency_key, at,
		CASE WHEN octet_length(payload) > ? THEN '' ELSE payload END AS payload, octet_length(payload) > ? AS big
		FROM events WHERE subject = ? AND id < ? ORDER BY id DESC LIMIT ?`, maxPayload, maxPayload, subject, before, limit)
}
