package db

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// selectIn is selectAll of a query whose IN (?) take slices of args
// (sqlx.In expands them).
func selectIn[T any](ctx context.Context, q Querier, query string, args ...any) ([]T, error) {
	query, args, err := sqlx.In(query, args...)
	if err != nil {
		return nil, err
	}
	return selectAll[T](ctx, q, query, args...)
}

// selectAll reads every row query returns as a T (nil when none).
func selectAll[T any](ctx context.Context, q Querier, query string, args ...any) ([]T, error) {
	var out []T
	err := q.SelectContext(ctx, &out, query, args...)
	return out, err
}

// getOne reads the one row query returns as a T; no row is a
// *NotFoundError of kind and id.
func getOne[T any](ctx context.Context, q Querier, kind, id, query string, args ...any) (T, error) {
	return getRow[T](ctx, q, &NotFoundError{Kind: kind, ID: id}, query, args...)
}

// getRow reads the one row query returns as a T; no row is notFound.
func getRow[T any](ctx context.Context, q Querier, notFound error, query string, args ...any) (T, error) {
	var v T
	err := q.GetContext(ctx, &v, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return v, notFound
	}
	return v, err
}
