package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
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
	p.Banner, _ = c.Get(ctxStoreBanner).(string)
	return p
}

// render writes a templ component as the response.
func render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response().Writer)
}

// RenderError renders the browser's error page (used by web's error mapper).
// The error mapper hands over PageText: the page's wording of the error.
func RenderError(c echo.Context, status int, title, message string) error {
	return render(c, status, views.Error(page(c, title, ""), views.ErrorPage{Status: status, Title: title, Message: message, Back: errorBack(c, status)}))
}

// PageText is what a page shows of a user error: its Page wording when it
// has one (its hint said for a browser), else its message.
func PageText(ue *UserError) string {
	if ue.Page != "" {
		return ue.Page
	}
	return ue.Message
}

// refusedOnPage answers the error of a page's action: a refusal of one of
// statuses shows the page again, with why (notDone: view gets it with the
// refusal), from the data load reads; anything else is answered as is.
func refusedOnPage[D any](c echo.Context, uerr error, statuses []int, load func() (D, error), view func(d D, msg string, ue *UserError) templ.Component) error {
	var ue *UserError
	if !errors.As(uerr, &ue) || !slices.Contains(statuses, ue.Status) {
		return uerr
	}
	d, err := load()
	if err != nil {
		return err
	}
	return render(c, ue.Status, view(d, notDone(ue), ue))
}

// notDone is the message of a page shown again after it refused an action.
func notDone(ue *UserError) string {
	return "Not done: " + PageText(ue) + ". The page has been reloaded."
}

// errorBack leads out of an error page to the section the request was in,
// if the user may open it (a viewer refused /admin/users is not sent back
// to it), else to all assets.
func errorBack(c echo.Context, status int) views.Link {
	path := c.Request().URL.Path
	p := CurrentPrincipal(c)
	account := p != nil && !p.Anonymous()
	switch {
	case (c.Path() == "/schedules/:name" || c.Path() == "/sensors/:name") && status == http.StatusBadRequest:
		// A link into its lists that no longer holds (an old page of
		// ticks, evaluations or events): the first page is the way on.
		return views.Link{Href: path, Label: "Back to the first page"}
	case strings.HasPrefix(c.Path(), "/assets/:key/partitions/:partition/") && status != http.StatusNotFound:
		// A partition's form (taint, clear taint) returns to its partition.
		key := pathParam(c, "partition")
		return views.Link{Href: PartitionHref(pathParam(c, "key"), key), Label: "Back to partition " + key}
	case strings.HasPrefix(path, "/backfills"), strings.HasPrefix(path, "/runs/"):
		return views.Link{Href: "/backfills", Label: "Back to all backfills"}
	case strings.HasPrefix(path, "/automation"), strings.HasPrefix(path, "/schedules/"):
		return views.Link{Href: "/automation", Label: "Back to Automation"}
	case strings.HasPrefix(path, "/status"):
		return views.Link{Href: "/status", Label: "Back to the status board"}
	case strings.HasPrefix(path, "/admin/") && account && p.Role >= auth.RoleAdmin:
		return views.Link{Href: "/admin/users", Label: "Back to users"}
	case strings.HasPrefix(path, "/settings/tokens") && account:
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
	case http.StatusServiceUnavailable:
		// The database does not answer or cannot write: it passes.
		return "Temporarily unavailable"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "Bad request"
}
