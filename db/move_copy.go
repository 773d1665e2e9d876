package db

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The rows of a move: each table streamed from the SQLite snapshot into
// PostgreSQL's COPY (rows are read and sent as they come, never a table
// held in memory), each value converted to its PostgreSQL column's type.

// copyTable copies table's rows from the source's transaction into the
// target's and answers how many.
func copyTable(ctx context.Context, src *sql.Tx, dst pgx.Tx, table string, cols []moveColumn) (int64, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	rows, err := src.QueryContext(ctx, `SELECT `+identList(names)+` FROM `+pgx.Identifier{table}.Sanitize())
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	rs := &rowSource{rows: rows, cols: cols, vals: make([]any, len(cols)), ptrs: make([]any, len(cols))}
	for i := range rs.vals {
		rs.ptrs[i] = &rs.vals[i]
	}
	n, err := dst.CopyFrom(ctx, pgx.Identifier{table}, names, rs)
	if err != nil {
		return n, err
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	// COPY took what the rows gave: count them again on both sides all
	// the same, so that a row lost on the way is an error, not a surprise.
	var want int64
	if err := src.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&want); err != nil {
		return n, err
	}
	if n != want || rs.n != want {
		return n, fmt.Errorf("copied %d rows of %d", n, want)
	}
	return n, nil
}

// rowSource is a table's rows from SQLite as pgx's CopyFromSource.
type rowSource struct {
	rows *sql.Rows
	cols []moveColumn
	vals []any
	ptrs []any
	n    int64
}

func (r *rowSource) Next() bool { return r.rows.Next() }

func (r *rowSource) Err() error { return r.rows.Err() }

func (r *rowSource) Values() ([]any, error) {
	if err := r.rows.Scan(r.ptrs...); err != nil {
		return nil, err
	}
	r.n++
	out := make([]any, len(r.cols))
	for i, c := range r.cols {
		v, err := convert(r.vals[i], c.kind)
		if err != nil {
			return nil, fmt.Errorf("row %d, column %s: %w", r.n, c.name, err)
		}
		out[i] = v
	}
	return out, nil
}

// convert is v, a SQLite value (int64, float64, string, []byte, bool or
// nil: SQLite keeps whatever a column was given), as a value of kind k.
func convert(v any, k colKind) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kindInt:
		switch x := v.(type) {
		case int64:
			return x, nil
		case bool:
			return map[bool]int64{false: 0, true: 1}[x], nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return int64(x), nil
			}
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return n, nil
			}
		case []byte:
			if n, err := strconv.ParseInt(strings.TrimSpace(string(x)), 10, 64); err == nil {
				return n, nil
			}
		}
	case kindFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return f, nil
			}
		}
	case kindText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		case bool:
			return map[bool]string{false: "0", true: "1"}[x], nil
		}
	case kindBytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return b, nil
			}
		}
	}
	return nil, fmt.Errorf("value %.40q (%T) does not fit the PostgreSQL column", fmt.Sprint(v), v)
}

// resetSequences sets every identity (or serial) sequence of the target
// past its column's largest id, and past SQLite's AUTOINCREMENT counter
// of the table (sqlite_sequence: ids of deleted rows are never given
// again there, nor here): new rows continue the ids.
func resetSequences(ctx context.Context, src *sql.Tx, dst pgx.Tx) (int, error) {
	type seq struct{ Table, Column, Seq string }
	seqs, err := pgCollect(ctx, dst, pgx.RowToStructByPos[seq], `SELECT c.relname, a.attname, pg_get_serial_sequence(quote_ident(c.relname), a.attname)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
		  AND pg_get_serial_sequence(quote_ident(c.relname), a.attname) IS NOT NULL
		ORDER BY c.relname, a.attname`)
	if err != nil {
		return 0, err
	}
	var hasCounters int
	if err := src.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'`).Scan(&hasCounters); err != nil {
		return 0, err
	}
	for _, s := range seqs {
		var top int64
		if err := dst.QueryRow(ctx, `SELECT COALESCE(MAX(`+pgx.Identifier{s.Column}.Sanitize()+`), 0) FROM `+pgx.Identifier{s.Table}.Sanitize()).Scan(&top); err != nil {
			return 0, err
		}
		if hasCounters > 0 {
			var counter sql.NullInt64
			err := src.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, s.Table).Scan(&counter)
			if err != nil && err != sql.ErrNoRows {
				return 0, err
			}
			top = max(top, counter.Int64)
		}
		// setval(seq, n, true): the next id is n+1; (seq, 1, false): 1.
		if _, err := dst.Exec(ctx, `SELECT setval($1, $2, $3)`, s.Seq, max(top, 1), top > 0); err != nil {
			return 0, fmt.Errorf("sequence of %s.%s: %w", s.Table, s.Column, err)
		}
	}
	return len(seqs), nil
}
