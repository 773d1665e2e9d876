package db

import (
	"context"
	"strconv"
	"strings"
)

// RunFilter selects runs of every backfill for the runs list: each field
// left empty (zero) selects every run.
type RunFilter struct {
	Asset      string   // the run's asset key
	States     []string // run states (RunQueued …)
	BackfillID string
	// From and To bound the time the run was queued (created_at, Unix
	// milliseconds): From <= created_at < To; 0 leaves that end open.
	From, To int64
	// Before is the position of the last row of the page before: the page
	// holds the runs after it, newest first. A zero Before starts at the
	// newest run.
	Before RunPos
}

// RunPos is a run's place in the runs list: newest first by created_at,
// then by id.
type RunPos struct {
	CreatedAt int64
	ID        string
}

// ListedRun is a run of the runs list with the backfill it belongs to.
type ListedRun struct {
	Run
	BackfillTitle     string `db:"backfill_title"`
	BackfillCreatedBy string `db:"backfill_created_by"`
}

// RunList lists up to limit runs f selects, newest first (created_at, id
// descending), from f.Before on. Every filter has an index in the list's
// order (migration 0031): a page reads its own rows, not the runs before
// it, whatever the number of runs.
func (s *Store) RunList(ctx context.Context, f RunFilter, limit int) ([]ListedRun, error) {
	q, args := runListQuery(f, limit)
	return selectAll[ListedRun](ctx, s.r, q, args...)
}

// runListQuery is RunList's query and its arguments. Several states are
// one query per state, each reading its state's index in the list's order
// for at most limit rows, merged: "state IN (…)" would read every run of
// those states and sort them (all of a million runs for
// succeeded,failed).
func runListQuery(f RunFilter, limit int) (string, []any) {
	if len(f.States) > 1 {
		var parts []string
		var args []any
		for i, st := range f.States {
			one := f
			one.States = []string{st}
			q, a := runListQuery(one, limit)
			// PostgreSQL (before 16) wants a name for each subquery.
			parts = append(parts, `SELECT * FROM (`+q+`) AS s`+strconv.Itoa(i))
			args = append(args, a...)
		}
		return strings.Join(parts, ` UNION ALL `) + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)
	}
	var where []string
	var args []any
	if f.Asset != "" {
		where = append(where, `r.asset = ?`)
		args = append(args, f.Asset)
	}
	if f.BackfillID != "" {
		where = append(where, `r.backfill_id = ?`)
		args = append(args, f.BackfillID)
	}
	if len(f.States) == 1 {
		where = append(where, `r.state = ?`)
		args = append(args, f.States[0])
	}
	if f.From > 0 {
		where = append(where, `r.created_at >= ?`)
		args = append(args, f.From)
	}
	if f.To > 0 {
		where = append(where, `r.created_at < ?`)
		args = append(args, f.To)
	}
	if f.Before != (RunPos{}) {
		where = append(where, `(r.created_at, r.id) < (?, ?)`)
		args = append(args, f.Before.CreatedAt, f.Before.ID)
	}
	q := `SELECT r.*, COALESCE(b.title, '') AS backfill_title, COALESCE(b.created_by, '') AS backfill_created_by
		FROM runs r LEFT JOIN backfills b ON b.id = r.backfill_id`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY r.created_at DESC, r.id DESC LIMIT ?`
	return q, append(args, limit)
}

// RunSpan is when one attempt of a backfill's chunk ran, for the chunk
// timeline: Finished is nil while it runs.
type RunSpan struct {
	RunID    string `db:"run_id"`
	Chunk    int64  `db:"chunk"`
	Attempt  int64  `db:"attempt"`
	State    string `db:"state"`
	Started  int64  `db:"started_at"`
	Finished *int64 `db:"finished_at"`
}

// RunSpans lists every attempt of backfillID's runs by start time (a
// backfill of 10,000 chunks: 10,000 rows of six columns).
func (s *Store) RunSpans(ctx context.Context, backfillID string) ([]RunSpan, error) {
	return selectAll[RunSpan](ctx, s.r, `SELECT a.run_id, r.chunk, a.attempt, a.state, a.started_at, a.finished_at
		FROM runs r JOIN attempts a ON a.run_id = r.id WHERE r.backfill_id = ? ORDER BY a.started_at, r.chunk, a.attempt`, backfillID)
}
