package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
)

// identify resolves the principal of every request (bearer token or session
// cookie) before CSRF and role checks.
func identify(a *handlers.Auth) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			a.Identify(c)
			return next(c)
		}
	}
}

// csrf protects every state-changing browser request: a double-submit token
// (cookie "_csrf", form field "_csrf" or header X-CSRF-Token). Requests
// authenticated by an Authorization header carry no ambient authority and are
// exempt; unauthenticated requests to protected routes are refused by
// requireRole anyway, so only requests that could act (signed in, or public
// routes such as /login) are checked.
func csrf(a *handlers.Auth, public map[string]bool) echo.MiddlewareFunc {
	config := func(secure bool) echo.MiddlewareFunc {
		return middleware.CSRFWithConfig(middleware.CSRFConfig{
			Skipper: func(c echo.Context) bool {
				if handlers.HasBearer(c.Request()) {
					return true
				}
				switch c.Request().Method {
				case http.MethodGet, http.MethodHead, http.MethodOptions:
					return false
				}
				p := handlers.CurrentPrincipal(c)
				return p.Anonymous() && !public[c.Request().Method+" "+c.Path()]
			},
			TokenLookup:    "header:" + echo.HeaderXCSRFToken + ",form:_csrf",
			CookieName:     handlers.CSRFCookie,
			CookiePath:     "/",
			CookieHTTPOnly: true,
			CookieSecure:   secure,
			CookieSameSite: http.SameSiteLaxMode,
			ErrorHandler: func(err error, c echo.Context) error {
				return handlers.Forbidden("the form's security token is missing or out of date (CSRF); reload the page and try again")
			},
		})
	}
	plainMW, secureMW := config(false), config(true)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		plain, secure := plainMW(next), secureMW(next)
		return func(c echo.Context) error {
			r := c.Request()
			// Echo trusts Sec-Fetch-Site for safe requests and then hands out a
			// placeholder instead of a token; pages need a real token for
			// their forms, so safe requests always take the token path.
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				r.Header.Del(echo.HeaderSecFetchSite)
			}
			// A signed-in session's token is bound to the session: whatever
			// _csrf cookie arrived, the expected token is the session's, so a
			// planted cookie and its matching form field do not pass.
			if p := handlers.CurrentPrincipal(c); p != nil && p.Via == "session" {
				if tok := a.CSRFToken(c); tok != "" {
					setRequestCookie(r, handlers.CSRFCookie, tok)
				}
			}
			if a.SecureRequest(r) {
				return secure(c)
			}
			return plain(c)
		}
	}
}

// setRequestCookie replaces the request's cookies named name with one value.
func setRequestCookie(r *http.Request, name, value string) {
	var parts []string
	for _, ck := range r.Cookies() {
		if ck.Name != name {
			parts = append(parts, ck.Name+"="+ck.Value)
		}
	}
	parts = append(parts, name+"="+value)
	r.Header.Set("Cookie", strings.Join(parts, "; "))
}

// requireRole refuses requests whose principal lacks role: no or bad
// credentials → 401 for the API (and for bad bearer tokens), a redirect to
// /login for pages; too low a role → 403.
func requireRole(role auth.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if role == auth.RolePublic {
			return next
		}
		return func(c echo.Context) error {
			if err := handlers.AuthError(c); err != nil {
				return err
			}
			p := handlers.CurrentPrincipal(c)
			if p == nil || (p.Anonymous() && p.Role < role) {
				if wantsJSON(c) {
					return handlers.Unauthorized("sign in first: send \"Authorization: Bearer <token>\" (create one on /settings/tokens or with `tessera token create`)")
				}
				htmx := c.Request().Header.Get("HX-Request") == "true"
				login := "/login?next=" + url.QueryEscape(signInNext(c.Request(), htmx))
				if handlers.SessionExpired(c) {
					login += "&expired=1"
				}
				if htmx {
					c.Response().Header().Set("HX-Redirect", login)
					return handlers.Unauthorized("your session has ended; sign in again")
				}
				return c.Redirect(http.StatusSeeOther, login)
			}
			if p.Role < role {
				return handlers.Forbidden("this needs the %s role; you are signed in as %s (%s)", role, displayName(p), p.Role)
			}
			return next(c)
		}
	}
}

// signInNext is where to return after signing in: the page asked for, or,
// for an htmx request (a live section's fragment), the page the browser
// shows (HX-Current-URL), so that signing in again does not land on a bare
// fragment such as /backfills?fragment=rows.
func signInNext(r *http.Request, htmx bool) string {
	if htmx {
		if u, err := url.Parse(r.Header.Get("HX-Current-URL")); err == nil && strings.HasPrefix(u.Path, "/") {
			return u.RequestURI()
		}
		return "/"
	}
	return r.URL.RequestURI()
}

func displayName(p *handlers.Principal) string {
	if p.Name == "" {
		return "anonymous"
	}
	return p.Name
}

// publicUnsafe lists the public routes that change state ("METHOD path").
func publicUnsafe(routes []Route) map[string]bool {
	m := map[string]bool{}
	for _, r := range routes {
		if r.Role == auth.RolePublic && r.Method != http.MethodGet && !strings.HasPrefix(r.Path, "/static") {
			m[r.Method+" "+r.Path] = true
		}
	}
	return m
}
