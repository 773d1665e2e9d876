package db

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

var (
	// ErrNotFound is returned when a row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDuplicateEvent is returned when an event's idempotency key was used before.
	ErrDuplicateEvent = errors.New("duplicate event idempotency key")
	// ErrIdempotencyConflict is returned when an idempotency key is sent
	// again with a different request.
	ErrIdempotencyConflict = errors.New("the Idempotency-Key was used for a different request")
)

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return false
}
