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
	// Reason is the message without where to look next, and Hint says
	// where (a HintKind) with Params: each surface words the hint its own
	// way (an endpoint for the API, a page, a CLI command). Message and
	// Page are Reason with the API's and the page's wording of Hint.
	Reason string            `json:"reason,omitempty"`
	Hint   string            `json:"hint,omitempty"`
	Params map[string]string `json:"params,omitempty"`
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
// says what was not found, and its hint where the valid ids are listed
// (each surface words it). The store's own text (`backfill "bf_x": not
// found`) names the id but not where to look.
func StoreNotFound(err error) *UserError {
	var nf *db.NotFoundError
	if !errors.As(err, &nf) {
		return &UserError{Status: http.StatusNotFound, Code: "not_found", Message: err.Error()}
	}
	ue := &UserError{Status: http.StatusNotFound, Code: "not_found"}
	reason := fmt.Sprintf("%s %q not found", nf.Kind, nf.ID)
	params := map[string]string{"kind": nf.Kind, "id": nf.ID}
	switch nf.Kind {
	case "backfill":
		return withHint(ue, reason, HintBackfillList, params)
	case "run":
		return withHint(ue, reason, HintRunList, params)
	case "asset":
		ue.Page = reason + "; the overview lists the declared assets"
		return withHint(ue, reason, HintAssetList, params)
	}
	return withHint(ue, reason, "", params)
}

// assetNotFound is the 404 of an asset key the workspace does not declare.
func assetNotFound(key, source string) *UserError {
	ue := &UserError{Status: http.StatusNotFound, Code: "not_found"}
	reason := fmt.Sprintf("asset %q is not declared in the workspace (%s)", key, source)
	ue.Page = reason + "; the overview lists the declared assets"
	return withHint(ue, reason, HintAssetList, map[string]string{"asset": key})
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
