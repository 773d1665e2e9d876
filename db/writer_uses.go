package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Reads must never queue for the writer: it has one connection, which the
// backfill engine holds for a step at a time, and every write a page made
// would also take a turn from the engine. The web layer marks the context
// of each GET and HEAD request with ForRead; a use of the writer on behalf
// of a marked context is counted (WriterUsesByReads, the metric
// tessera_db_writer_uses_by_reads_total), and TestReadsNeverUseTheWriter
// sweeps every page and API read with a backfill running and expects none.

type forReadKey struct{}

// ForRead marks ctx as a read's (an HTTP GET or HEAD).
func ForRead(ctx context.Context) context.Context { return context.WithValue(ctx, forReadKey{}, true) }

// IsRead reports whether ctx was marked by ForRead.
func IsRead(ctx context.Context) bool { return ctx.Value(forReadKey{}) != nil }

// writer is the writer pool, for a use on behalf of ctx: every use of the
// writer in this package goes through it (TestWriterUsesGoThroughWriter).
func (s *Store) writer(ctx context.Context) *sqlx.DB {
	if IsRead(ctx) {
		s.readWriterUses.Add(1)
	}
	return s.w
}

// leaseWriter is the pool of the heartbeat and the leader lease: on
// PostgreSQL a connection beside the writer, which a controller step holds
// while it waits for the other instances' steps (LockSteps); on SQLite the
// writer.
func (s *Store) leaseWriter(ctx context.Context) *sqlx.DB {
	if s.leases != nil {
		return s.leases
	}
	return s.writer(ctx)
}

// WriterUsesByReads is how many times the writer was used on behalf of a
// context marked by ForRead since the store was opened (0 when every read
// stays on the reader pool).
func (s *Store) WriterUsesByReads() int64 { return s.readWriterUses.Load() }
