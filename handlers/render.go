package handlers

import (
	"fmt"
	"net/http"
	"regexp"
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
// The message is said for a browser (PageMessage): the error mapper hands
// over the API's message when an error has no page wording of its own.
func RenderError(c echo.Context, status int, title, message string) error {
	return render(c, status, views.Error(page(c, title, ""), views.ErrorPage{Status: status, Title: title, Message: PageMessage(message), Back: errorBack(c, status)}))
}

// pageHints turn the API's pointers in an error message (an endpoint to
// call, a field to send) into what a browser user does instead.
var pageHints = []struct {
	re   *regexp.Regexp
	repl func(m []string) string
}{
	{regexp.MustCompile(`backfill (\S+) is at state_version \d+ \(state (\w+)\), not \d+: it changed since you read it; GET /api/v1/backfills/\S+ and, if the action still applies, send its state_version`),
		func(m []string) string {
			return fmt.Sprintf("backfill %s changed since you read it: it is now %s; reload the page to see the current state and, if the action still applies, try again",
				m[1], strings.ToLower(views.BackfillStateLabel(m[2], 0)))
		}},
	{regexp.MustCompile(`GET /api/v1/assets lists the declared assets`), fixed("the Assets page lists the declared assets")},
	{regexp.MustCompile(`GET /api/v1/assets/\S+/partitions lists its partitions`), fixed("the asset's page shows its partitions")},
	{regexp.MustCompile(`list backfills with GET /api/v1/backfills`), fixed("the Backfills page lists every backfill")},
	{regexp.MustCompile(`GET /api/v1/users lists the accounts( \(their id field\))?`), fixed("the Users page lists the accounts")},
	{regexp.MustCompile(`GET /api/v1/tokens lists your tokens( \(their id field\))?`), fixed("the API tokens page lists your tokens")},
}

func fixed(s string) func([]string) string { return func([]string) string { return s } }

// PageMessage is an error message as a page says it: the API's pointers
// ("GET /api/v1/assets lists the declared assets", "send its
// state_version") become the browser's ("the Assets page lists…", "reload
// the page…"). The JSON API keeps the message as it is.
func PageMessage(msg string) string {
	for _, h := range pageHints {
		msg = h.re.ReplaceAllStringFunc(msg, func(s string) string { return h.repl(h.re.FindStringSubmatch(s)) })
	}
	return msg
}

// errorBack leads out of an error page to the section the request was in,
// if the user may open it (a viewer refused /admin/users is not sent back
// to it), else to all assets.
func errorBack(c echo.Context, status int) views.Link {
	path := c.Request().URL.Path
	p := CurrentPrincipal(c)
	account := p != nil && !p.Anonymous()
	switch {
	case strings.HasPrefix(c.Path(), "/assets/:key/partitions/:partition/") && status != http.StatusNotFound:
		// A partition's form (taint, clear taint) returns to its partition.
		key := pathParam(c, "partition")
		return views.Link{Href: PartitionHref(pathParam(c, "key"), key), Label: "Back to partition " + key}
	case strings.HasPrefix(path, "/backfills"), strings.HasPrefix(path, "/runs/"):
		return views.Link{Href: "/backfills", Label: "Back to all backfills"}
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
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "Bad request"
}
