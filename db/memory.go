package db

import "context"

// ReleaseMemory frees the writer connection's page cache (the pages stay
// in the file; the engine reads back the ones it needs) and gives the free
// memory of the C heap back to the system. A big write (a million explicit
// keys) fills the cache, up to EngineWriterCache, with pages nothing may
// read again, and leaves the C heap holding what it freed.
func (s *Store) ReleaseMemory(ctx context.Context) error {
	var err error
	if s.dialect == SQLite { // PostgreSQL's caches are the server's
		_, err = s.writer(ctx).ExecContext(ctx, `PRAGMA shrink_memory`)
	}
	trimCHeap()
	return err
}
