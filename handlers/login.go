package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/views"
)

// signInHref is the sign-in page that comes back to the page c shows: its
// address for a GET, else page (a form's POST has no address to return to).
func signInHref(c echo.Context, page string) string {
	next := page
	if c.Request().Method == http.MethodGet {
		next = c.Request().URL.RequestURI()
	}
	return "/login?next=" + url.QueryEscape(next)
}

// safeNext keeps a post-login redirect on this site: a local absolute path
// only (no scheme, no host, no "//" or "/\" tricks).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

// LoginForm shows the sign-in page (GET /login).
func (h *Handler) LoginForm(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if p := CurrentPrincipal(c); p != nil && !p.Anonymous() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	v := views.LoginView{Next: next, Expired: SessionExpired(c) || c.QueryParam("expired") == "1"}
	return render(c, http.StatusOK, views.LoginPage(page(c, "Sign in", "login"), v))
}

// Login checks the credentials and starts a session (POST /login).
func (h *Handler) Login(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	pw := c.FormValue("password")
	next := safeNext(c.FormValue("next"))
	v := views.LoginView{Name: name, Next: next}
	if name == "" || pw == "" {
		v.Error = "enter your user name and password"
		return render(c, http.StatusBadRequest, views.LoginPage(page(c, "Sign in", "login"), v))
	}
	u, err := h.Auth.CheckLogin(c.Request().Context(), name, pw, c.RealIP())
	if err != nil {
		var refused *LoginRefused
		if errors.As(err, &refused) {
			h.Log.Info("sign-in refused", "user", logName(name), "ip", c.RealIP(), "reason", refused.Code, "scope", refused.Scope)
			c.Response().Header().Set("Retry-After", refused.RetryAfterHeader())
			ue := refused.UserError()
			v.Error = ue.Message
			return render(c, ue.Status, views.LoginPage(page(c, "Sign in", "login"), v))
		}
		if ue := StoreUnwritable(err); ue != nil {
			// Signing in writes (the attempt, the session): say why it
			// cannot, on the sign-in page.
			h.Log.Warn("sign-in refused: the database cannot be written", "user", logName(name), "err", err)
			c.Response().Header().Set("Retry-After", strconv.Itoa(ue.RetryAfter))
			v.Error = ue.Message
			return render(c, ue.Status, views.LoginPage(page(c, "Sign in", "login"), v))
		}
		if ue, ok := err.(*UserError); ok {
			h.Log.Info("sign-in refused", "user", logName(name), "ip", c.RealIP(), "reason", ue.Code)
			v.Error = ue.Message
			return render(c, ue.Status, views.LoginPage(page(c, "Sign in", "login"), v))
		}
		return err
	}
	if err := h.Auth.StartSession(c, u); err != nil {
		return err
	}
	h.Log.Info("signed in", "user", u.Name, "ip", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

// Logout ends the session (POST /logout).
func (h *Handler) Logout(c echo.Context) error {
	if err := h.Auth.EndSession(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// MeJSON is GET /api/v1/me.
type MeJSON struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Via  string `json:"via"`
}

// APIMe reports who the credentials belong to (GET /api/v1/me).
func (h *Handler) APIMe(c echo.Context) error {
	p := CurrentPrincipal(c)
	if p == nil {
		return Unauthorized("not signed in")
	}
	return c.JSON(http.StatusOK, MeJSON{Name: p.Name, Role: p.Role.String(), Via: p.Via})
}

// logName is a typed sign-in name as the log shows it: at most 64
// characters (the longest user name), so that a megabyte of name costs the
// log no more than a short one.
func logName(name string) string {
	if r := []rune(name); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return name
}
