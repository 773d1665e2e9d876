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

// IsUniqueViolation says whether err is a UNIQUE or PRIMARY KEY
// constraint's refusal, on either backend (a concurrent insert of the
// same key won the race).
func IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

// isUniqueViolation says whether err is a UNIQUE or PRIMARY KEY
// constraint's refusal. On PostgreSQL it also ends the transaction: a
// caller that goes on in it after one needs a savepoint.
func isUniqueViolation(err error) bool {
	if pgCode(err) == "23505" {
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return false
}
