package db

import "context"

// ConflictsBefore lists recorded run-key conflicts with id < before (all when
// before <= 0), newest first.
func (s *Store) ConflictsBefore(ctx context.Context, before int64, limit int) ([]Conflict, error) {
	if before <= 0 {
		return s.Conflicts(ctx, limit)
	}
	return selectAll[Conflict](ctx, s.r, `SELECT * FROM conflicts WHERE id < ? ORDER BY id DESC LIMIT ?`, before, limit)
}
