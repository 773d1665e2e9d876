package handlers

import (
	"fmt"
	"net/http"
)

// UserError is an error the user can fix: it carries the HTTP status, a
// machine-readable code, the message shown to the user and, for form and
// body validation, the field it concerns. Anything else is an internal error.
type UserError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
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
