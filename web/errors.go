package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// ErrorBody is the one error format of the API.
type ErrorBody struct {
	Error handlers.UserError `json:"error"`
}

// errorHandler maps every error to a response: user errors to their 4xx with
// the message, echo's own HTTP errors to theirs, anything else to a logged 500
// that leaks nothing. API paths answer JSON, pages answer HTML.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		ue := toUserError(err)
		if errors.Is(err, echo.ErrNotFound) {
			// No route: echo says only "Not Found".
			ue = noRoute(c.Request().URL.Path)
		}
		if ue != nil && ue.Code == "store_unwritable" {
			log.Warn("request refused: the database cannot be written", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		}
		if ue != nil && ue.Code == "store_unavailable" {
			log.Warn("request refused: the database does not answer", "method", c.Request().Method, "path", c.Request().URL.Path, "err", strings.Join(strings.Fields(err.Error()), " "))
		}
		if ue != nil && ue.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(ue.RetryAfter))
		}
		if ue == nil {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
			ue = &handlers.UserError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error; the server log has the details"}
		}
		var werr error
		if wantsJSON(c) {
			werr = c.JSON(ue.Status, ErrorBody{Error: *ue})
		} else if c.Request().Method == http.MethodHead {
			werr = c.NoContent(ue.Status)
		} else if r := c.Request(); ue.Status == http.StatusUnauthorized && r.Method == http.MethodGet && r.Header.Get("HX-Request") != "true" && r.Header.Get("Authorization") == "" {
			// A page that needs an account, asked for without one (an
			// anonymous viewer opening /settings/tokens): sign in, then
			// come back, as requireRole does for pages above one's role.
			// A bad bearer token stays a 401: signing in would not fix it.
			werr = c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(signInNext(c.Request(), false)))
		} else {
			werr = handlers.RenderError(c, ue.Status, handlers.StatusTitle(ue.Status), handlers.PageText(ue))
		}
		if werr != nil {
			log.Error("writing error response", "err", werr)
		}
	}
}

// noRoute is the 404 of a path the server has no route for: which path
// (a client's --server with a path prefix shows in it), and where the
// pages and the API are.
func noRoute(path string) *handlers.UserError {
	if len(path) > 200 {
		path = path[:200] + "…"
	}
	return handlers.NotFound("no page or API endpoint at %s; the dashboard starts at /, the API at /api/v1 (GET /api/v1/openapi.json lists its endpoints)", path)
}

// StatusClientClosedRequest is logged and counted for requests the client
// abandoned before the answer (nginx's 499).
const StatusClientClosedRequest = 499

func toUserError(err error) *handlers.UserError {
	var ue *handlers.UserError
	if errors.As(err, &ue) {
		return ue
	}
	if ue := handlers.StoreUnwritable(err); ue != nil {
		return ue
	}
	if ue := handlers.StoreUnavailable(err); ue != nil {
		return ue
	}
	if errors.Is(err, db.ErrNotFound) {
		return handlers.StoreNotFound(err)
	}
	if errors.Is(err, context.Canceled) {
		// The client went away (a live preview replaced by the next one, a
		// closed tab): not a server error, and nobody reads the answer.
		return &handlers.UserError{Status: StatusClientClosedRequest, Code: "client_closed_request", Message: "the client closed the request"}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && m != "" {
			msg = m
		}
		if he.Code == http.StatusRequestEntityTooLarge {
			// echo's BodyLimit says only "Request Entity Too Large".
			msg = "the request body is larger than " + strings.TrimSuffix(maxBody, "M") + " MiB, the most the server reads; send less, e.g. a report of materializations in several requests"
		}
		code := strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
		if he.Code >= 500 {
			return nil
		}
		ue := &handlers.UserError{Status: he.Code, Code: code, Message: msg}
		if he.Code == http.StatusMethodNotAllowed {
			// A page's address visited that only a form posts to (/logout
			// typed in, a form's answer opened again in a new tab): say
			// what it is rather than "Method Not Allowed".
			ue.Page = methodNotAllowedPage
		}
		return ue
	}
	return nil
}

// methodNotAllowedPage is what a page shows for a method its address does
// not take: a form's action opened as a page.
const methodNotAllowedPage = "This address is where a form sends a change (a button such as Sign out, Pause or Save), not a page to open: go back to the page with the button and press it there."

func wantsJSON(c echo.Context) bool {
	p := c.Request().URL.Path
	if strings.HasPrefix(p, "/api/") || p == MetricsPath { // a scraper follows no sign-in page
		return true
	}
	return strings.Contains(c.Request().Header.Get("Accept"), "application/json") &&
		!strings.Contains(c.Request().Header.Get("Accept"), "text/html")
}

// answerStatus is the status of the answer to c that the handler's err
// (nil: none) makes: the error mapper's for a user error, 500 for any
// other, else what the handler wrote.
func answerStatus(c echo.Context, err error) int {
	if err == nil {
		return c.Response().Status
	}
	if ue := toUserError(err); ue != nil {
		return ue.Status
	}
	return 500
}
