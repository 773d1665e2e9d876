package db

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Live changes across instances (issue 23). On PostgreSQL, an instance
// that changed something (a backfill's state, its runs) says so on one
// NOTIFY channel, LiveChannel, after the change is committed; every
// instance LISTENs on a connection of its own (ListenLive) and tells its
// live pages. When that connection is down, an instance polls the events
// written since the last it knows of (EventSubjectsSince) instead. SQLite
// is one instance: none of this runs there.

// LiveChannel is the NOTIFY channel of live changes.
const LiveChannel = "tessera_live"

// MaxNotifyPayload bounds a notification's payload (PostgreSQL's limit is
// 8000 bytes).
const MaxNotifyPayload = 7900

// ErrNotPostgres is the answer of the multi-instance statements on a
// SQLite store.
var ErrNotPostgres = errors.New("only a PostgreSQL store is shared by several instances")

// liveConns is the store's connection for NOTIFY, opened at first use:
// not the writer, which the controller's steps keep busy, and whose
// statements are the store's data.
type liveConns struct {
	mu     sync.Mutex
	notify *sql.DB
}

func (l *liveConns) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.notify == nil {
		return nil
	}
	err := l.notify.Close()
	l.notify = nil
	return err
}

// NotifyLive sends payload on LiveChannel. It returns at once on a
// SQLite store (ErrNotPostgres).
func (s *Store) NotifyLive(ctx context.Context, payload string) error {
	if s.dialect != Postgres {
		return ErrNotPostgres
	}
	s.live.mu.Lock()
	if s.live.notify == nil {
		d, err := plainPostgres(s.loc.URL)
		if err != nil {
			s.live.mu.Unlock()
			return err
		}
		d.SetMaxOpenConns(1)
		d.SetMaxIdleConns(1)
		s.live.notify = d
	}
	d := s.live.notify
	s.live.mu.Unlock()
	_, err := d.ExecContext(ctx, `SELECT pg_notify($1, $2)`, LiveChannel, payload)
	return err
}

// LiveListener is a connection LISTENing on LiveChannel.
type LiveListener struct{ conn *pgx.Conn }

// ListenLive opens a connection of its own that listens on LiveChannel.
func (s *Store) ListenLive(ctx context.Context) (*LiveListener, error) {
	if s.dialect != Postgres {
		return nil, ErrNotPostgres
	}
	cfg, err := pgx.ParseConfig(s.loc.URL)
	if err != nil {
		return nil, err
	}
	conn, err := connectOne(ctx, cfg, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `LISTEN `+LiveChannel)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &LiveListener{conn: conn}, nil
}

// ErrNoNotification is Wait's answer when nothing came within its time.
var ErrNoNotification = errors.New("no notification")

// Wait returns the payload of the next notification, ErrNoNotification
// when none came within d (the connection was checked meanwhile), or the
// connection's error once it is broken.
func (l *LiveListener) Wait(ctx context.Context, d time.Duration) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	n, err := l.conn.WaitForNotification(wctx)
	cancel()
	if err == nil {
		return n.Payload, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if wctx.Err() != nil && !l.conn.IsClosed() {
		// Quiet, or a server gone without a word: ask it.
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := l.conn.Ping(pctx); err != nil {
			return "", err
		}
		return "", ErrNoNotification
	}
	return "", err
}

// Close closes the listener's connection.
func (l *LiveListener) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.conn.Close(ctx)
}

// LastEventID is the id of the newest event (0 when there is none).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := s.r.GetContext(ctx, &id, `SELECT MAX(id) FROM events`)
	return id.Int64, err
}

// EventSubjectsSince returns the distinct subjects of the events after
// id after (at most limit events, oldest first) and the last id read
// (after when there is none): what a poll for changes tells live pages.
func (s *Store) EventSubjectsSince(ctx context.Context, after int64, limit int) (subjects []string, last int64, err error) {
	var rows []struct {
		ID      int64  `db:"id"`
		Subject string `db:"subject"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT id, subject FROM events WHERE id > ? ORDER BY id LIMIT ?`, after, limit); err != nil {
		return nil, after, err
	}
	last = after
	seen := map[string]bool{}
	for _, r := range rows {
		last = r.ID
		if !seen[r.Subject] {
			seen[r.Subject] = true
			subjects = append(subjects, r.Subject)
		}
	}
	return subjects, last, nil
}

// BackfillOfSubject is the backfill id of an event subject
// ("backfill:ID"), or "".
func BackfillOfSubject(subject string) string {
	id, ok := strings.CutPrefix(subject, "backfill:")
	if !ok {
		return ""
	}
	return id
}
