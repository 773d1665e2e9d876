package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// UserError is an error the user can fix: it carries the HTTP status, a
// machine-readable code, the message shown to the user and, for form and
// body validation, the field it concerns. Anything else is an internal error.
type UserError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Page, when set, is what a page shows instead of Message (which then
	// points API clients at an endpoint).
	Page string `json:"-"`
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

func (e *UserError) Error() string { return e.Message }

// NotFound is a 404 user error.
func NotFound(format string, args ...any) *UserError {
	return &UserError{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 user error about one field.
func BadRequest(field, format string, args ...any) *UserError {
	return &UserError{Status: http.StatusBadRequest, Code: "invalid", Field: field, Message: fmt.Sprintf(format, args...)}
}

// Conflict is a 409 user error.
func Conflict(format string, args ...any) *UserError {
	return &UserError{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is a 401 user error: no or bad credentials.
func Unauthorized(format string, args ...any) *UserError {
	return &UserError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: fmt.Sprintf(format, args...)}
}

// Forbidden is a 403 user error: signed in, but the role does not allow it.
func Forbidden(format string, args ...any) *UserError {
	return &UserError{Status: http.StatusForbidden, Code: "forbidden", Message: fmt.Sprintf(format, args...)}
}

// StoreNotFound is the 404 of a store error that wraps db.ErrNotFound: it
// says what was not found and where the valid ids are listed — an API
// endpoint in Message, a page in Page. The store's own text
// (`backfill "bf_x": not found`) names the id but not where to look.
func StoreNotFound(err error) *UserError {
	var nf *db.NotFoundError
	if !errors.As(err, &nf) {
		return &UserError{Status: http.StatusNotFound, Code: "not_found", Message: err.Error()}
	}
	var api, page string
	switch nf.Kind {
	case "backfill":
		api = fmt.Sprintf("backfill %q not found; list backfills with GET /api/v1/backfills", nf.ID)
		page = fmt.Sprintf("backfill %q not found; the Backfills page lists every backfill", nf.ID)
	case "run":
		api = fmt.Sprintf("run %q not found; a backfill's runs are the chunks listed by GET /api/v1/backfills/{id}/chunks (each chunk's id is its run id; list backfills with GET /api/v1/backfills)", nf.ID)
		page = fmt.Sprintf("run %q not found; a backfill's page lists its runs", nf.ID)
	case "asset":
		api = fmt.Sprintf("asset %q not found; GET /api/v1/assets lists the declared assets", nf.ID)
		page = fmt.Sprintf("asset %q not found; the overview lists the declared assets", nf.ID)
	default:
		api = fmt.Sprintf("%s %q not found", nf.Kind, nf.ID)
	}
	return &UserError{Status: http.StatusNotFound, Code: "not_found", Message: api, Page: page}
}

// assetNotFound is the 404 of an asset key the workspace does not declare.
func assetNotFound(key, source string) *UserError {
	return &UserError{Status: http.StatusNotFound, Code: "not_found",
		Message: fmt.Sprintf("asset %q is not declared in the workspace (%s); GET /api/v1/assets lists the declared assets", key, source),
		Page:    fmt.Sprintf("asset %q is not declared in the workspace (%s); the overview lists the declared assets", key, source)}
}

// fieldBadRequest is the 400 of a value the auth package refused (a
// *auth.FieldError), worded as its message says, about its field; other
// errors pass through.
func fieldBadRequest(err error) error {
	var fe *auth.FieldError
	if errors.As(err, &fe) {
		return BadRequest(fe.Field, "%s", fe.Message)
	}
	return err
}
