package db

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The schema of a move: which tables, which columns of which types, in
// which order, all read from the two databases' catalogs.

// gooseTable is goose's record of the applied migrations: each database
// keeps its own, it is never copied.
const gooseTable = "goose_db_version"

// postgresOnly are the tables PostgreSQL's schema has and SQLite's lacks
// by design (state that only several instances need, such as a lease
// between them): the move leaves them empty. Any other table that one
// schema has and the other lacks is a MoveSchemaMismatch. None yet.
var postgresOnly = map[string]bool{}

// colKind is how a column's values are converted for PostgreSQL.
type colKind int

const (
	kindInt colKind = iota
	kindFloat
	kindText
	kindBytes
	kindBool
)

// moveColumn is a column of a copied table.
type moveColumn struct {
	name string
	kind colKind
}

// movePlan is the tables to copy, parents before children, and their
// columns.
type movePlan struct {
	order   []string
	columns map[string][]moveColumn
}

// pgQuerier is where the target's reads run: its connection or a
// transaction on it.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgCollect runs query on the target and collects its rows with to.
func pgCollect[T any](ctx context.Context, q pgQuerier, to pgx.RowToFunc[T], query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, to)
}

// pgTables is the base tables of the target's current schema, by name.
func pgTables(ctx context.Context, c *pgx.Conn) ([]string, error) {
	return pgCollect(ctx, c, pgx.RowTo[string], `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname`)
}

// sqliteTables is the source's tables (SQLite's own aside), by name.
func sqliteTables(ctx context.Context, d *sql.DB) ([]string, error) {
	return sqliteStrings(ctx, d, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
}

// sqliteStrings runs q (of one text column) on the source.
func sqliteStrings(ctx context.Context, d *sql.DB, q string, args ...any) ([]string, error) {
	var out []string
	rows, err := d.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// diff is what a has and b lacks.
func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// planMove reads both schemas (both at this binary's version by now) and
// refuses, as MoveSchemaMismatch, a table or a column that one has and
// the other lacks: the list of what is copied is the schema's, so a
// table added by a migration is copied without anyone listing it, and a
// table a dialect's migration forgot is an error, not a silent loss.
func planMove(ctx context.Context, src *sql.DB, dst *pgx.Conn) (movePlan, error) {
	plan := movePlan{columns: map[string][]moveColumn{}}
	st, err := sqliteTables(ctx, src)
	if err != nil {
		return plan, err
	}
	pt, err := pgTables(ctx, dst)
	if err != nil {
		return plan, err
	}
	st = slices.DeleteFunc(st, func(t string) bool { return t == gooseTable })
	pt = slices.DeleteFunc(pt, func(t string) bool { return t == gooseTable || postgresOnly[t] })
	if a, b := diff(st, pt), diff(pt, st); len(a)+len(b) > 0 {
		return plan, &MoveError{Problem: MoveSchemaMismatch, OnlySQLite: a, OnlyPostgres: b}
	}
	deps := map[string][]string{}
	for _, t := range st {
		sc, err := sqliteStrings(ctx, src, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, t)
		if err != nil {
			return plan, err
		}
		type pgCol struct{ Name, Type string }
		pc, err := pgCollect(ctx, dst, pgx.RowToStructByPos[pgCol], `SELECT a.attname, format_type(a.atttypid, a.atttypmod)
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
			ORDER BY a.attnum`, t)
		if err != nil {
			return plan, err
		}
		var names []string
		for _, c := range pc {
			names = append(names, c.Name)
		}
		if a, b := diff(sc, names), diff(names, sc); len(a)+len(b) > 0 {
			return plan, &MoveError{Problem: MoveSchemaMismatch, Table: t, OnlySQLite: a, OnlyPostgres: b}
		}
		for _, c := range pc {
			k, ok := kindOf(c.Type)
			if !ok {
				return plan, &MoveError{Problem: MoveSchemaMismatch, Table: t, Column: c.Name, Type: c.Type}
			}
			plan.columns[t] = append(plan.columns[t], moveColumn{c.Name, k})
		}
		parents, err := sqliteStrings(ctx, src, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`, t)
		if err != nil {
			return plan, err
		}
		deps[t] = parents
	}
	type fk struct{ Child, Parent string }
	fks, err := pgCollect(ctx, dst, pgx.RowToStructByPos[fk], `SELECT c.relname, p.relname FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE k.contype = 'f' AND n.nspname = current_schema()`)
	if err != nil {
		return plan, err
	}
	for _, f := range fks {
		deps[f.Child] = append(deps[f.Child], f.Parent)
	}
	plan.order, err = dependencyOrder(st, deps)
	return plan, err
}

// kindOf is the conversion of a PostgreSQL column type (format_type's
// name); false for a type the copy does not know.
func kindOf(t string) (colKind, bool) {
	switch {
	case t == "bigint" || t == "integer" || t == "smallint":
		return kindInt, true
	case t == "double precision" || t == "real":
		return kindFloat, true
	case t == "text" || strings.HasPrefix(t, "character varying") || strings.HasPrefix(t, "character("):
		return kindText, true
	case t == "bytea":
		return kindBytes, true
	case t == "boolean":
		return kindBool, true
	}
	return 0, false
}

// dependencyOrder is tables with every table after those it references
// (deps: a table's parents), otherwise by name.
func dependencyOrder(tables []string, deps map[string][]string) ([]string, error) {
	done := map[string]bool{}
	var out []string
	for len(out) < len(tables) {
		progressed := false
		for _, t := range tables {
			if done[t] {
				continue
			}
			ready := true
			for _, p := range deps[t] {
				if p != t && !done[p] && slices.Contains(tables, p) {
					ready = false
					break
				}
			}
			if ready {
				done[t] = true
				out = append(out, t)
				progressed = true
			}
		}
		if !progressed {
			return nil, fmt.Errorf("the foreign keys of the tables %v form a cycle", diff(tables, out))
		}
	}
	return out, nil
}

// identList is tables as a comma-separated list of quoted identifiers.
func identList(tables []string) string {
	q := make([]string, len(tables))
	for i, t := range tables {
		q[i] = pgx.Identifier{t}.Sanitize()
	}
	return strings.Join(q, ", ")
}
