package handlers

import (
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/views"
)

// PageUser reports the signed-in user's name and role for the page frame; the
// accounts layer sets it. Nil means no accounts (anonymous).
var PageUser func(c echo.Context) (name, role string)

// page builds the frame data every page needs.
func page(c echo.Context, title, nav string) views.Page {
	p := views.Page{Title: title, Nav: nav}
	if tok, ok := c.Get("csrf").(string); ok {
		p.CSRF = tok
	}
	if PageUser != nil {
		p.User, p.Role = PageUser(c)
	}
	// Signed in, or anonymous-viewer mode: the pages behind the nav are readable.
	p.Browse = p.User != "" || CurrentPrincipal(c) != nil
	return p
}

// render writes a templ component as the response.
func render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response().Writer)
}

// RenderError renders the browser's error page (used by web's error mapper).
func RenderError(c echo.Context, status int, title, message string) error {
	return render(c, status, views.Error(page(c, title, ""), views.ErrorPage{Status: status, Title: title, Message: message, Back: errorBack(c.Request().URL.Path)}))
}

// errorBack leads out of an error page to the section the request was in.
func errorBack(path string) views.Link {
	switch {
	case strings.HasPrefix(path, "/backfills"), strings.HasPrefix(path, "/runs/"):
		return views.Link{Href: "/backfills", Label: "Back to all backfills"}
	case strings.HasPrefix(path, "/status"):
		return views.Link{Href: "/status", Label: "Back to the status board"}
	case strings.HasPrefix(path, "/admin/"):
		return views.Link{Href: "/admin/users", Label: "Back to users"}
	case strings.HasPrefix(path, "/settings/tokens"):
		return views.Link{Href: "/settings/tokens", Label: "Back to API tokens"}
	}
	return views.Link{Href: "/", Label: "Back to all assets"}
}

// StatusTitle is the page title for an HTTP status.
func StatusTitle(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusUnauthorized:
		return "Sign in required"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusTooManyRequests:
		return "Too many requests"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "Bad request"
}
