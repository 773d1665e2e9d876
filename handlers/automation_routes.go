package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// What the routes of schedules and sensors share: the engine that runs them
// (503 when it does not run on this server), the workspace's declaration of
// the route's :name (404 naming the declared ones), and pause/resume.

// unknownNamed is the 404 of a schedule or sensor (kind) the workspace does
// not declare, naming the known ones (comma-separated).
func unknownNamed(kind, name, known, hint string) *UserError {
	reason := fmt.Sprintf("unknown %s %q", kind, name)
	if known == "" {
		reason += " (the workspace declares no " + kind + ")"
	} else {
		reason += " (the workspace declares " + known + ")"
	}
	return withHint(NotFound(""), reason, hint, map[string]string{kind: name, "known": known})
}

// declared resolves the route's :name with find among the workspace's
// declarations of kind; the 404 names the declared ones and points at hint.
func declared[D any](c echo.Context, kind, hint string, find func(name string) *D, names func() []string) (*D, error) {
	name := pathParam(c, "name")
	if d := find(name); d != nil {
		return d, nil
	}
	return nil, unknownNamed(kind, name, strings.Join(names(), ", "), hint)
}

// engineAndDeclared is the engine of a route (its 503 first) and the declaration
// the route names.
func engineAndDeclared[E, D any](engine func() (E, error), declared func() (D, error)) (E, D, error) {
	e, err := engine()
	if err != nil {
		var d D
		return e, d, err
	}
	d, err := declared()
	return e, d, err
}

// apiSetPaused answers the API's pause and resume of a schedule or a
// sensor: the body must be empty (or {}), then set pauses or resumes (its
// error worded for the API), then answer shows it as it is now.
func apiSetPaused(c echo.Context, set func(ctx context.Context) error, answer func() error) error {
	if err := decodeStrict(c, &struct{}{}, true); err != nil {
		return err
	}
	if err := set(c.Request().Context()); err != nil {
		return err
	}
	return answer()
}

// backToPage ends a page's action that was done: back to fl.Page (303),
// which shows fl's notice once.
func (h *Handler) backToPage(c echo.Context, fl Flash) error {
	h.Auth.SetFlash(CurrentPrincipal(c), fl)
	return c.Redirect(http.StatusSeeOther, fl.Page)
}
