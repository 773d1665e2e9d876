package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// RetryDescendants returns the backfills launched by Retry failed of one of
// ids, and the retries of those, and so on (at most depth levels down),
// oldest first: what a page needs to tell whether a failed backfill's
// retries rebuilt what it failed to build.
func (s *Store) RetryDescendants(ctx context.Context, ids []string, depth int) ([]Backfill, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := sqlx.In(`WITH RECURSIVE kin(id, depth) AS (
			SELECT id, 1 FROM backfills WHERE parent_backfill_id IN (?)
			UNION
			SELECT b.id, kin.depth + 1 FROM backfills b JOIN kin ON b.parent_backfill_id = kin.id WHERE kin.depth < ?)
		SELECT * FROM backfills WHERE id IN (SELECT id FROM kin) ORDER BY seq`, ids, depth)
	if err != nil {
		return nil, err
	}
	return selectAll[Backfill](ctx, s.r, s.r.Rebind(q), args...)
}
