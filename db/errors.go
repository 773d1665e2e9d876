package db

import (
	"errors"
	"fmt"

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

// NotFoundError is ErrNotFound for one kind of row (backfill, run, asset)
// and the id that was asked for, so that callers can say where the valid
// ids are. errors.Is(err, ErrNotFound) holds.
type NotFoundError struct {
	Kind string // "backfill", "run", "asset"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q: not found", e.Kind, e.ID) }

// Is makes a NotFoundError match ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return false
}
