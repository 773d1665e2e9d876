package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/views"
)

const passwordPath = "/settings/password"

// PasswordForm shows the form to change one's own password
// (GET /settings/password).
func (h *Handler) PasswordForm(c echo.Context) error {
	p := CurrentPrincipal(c)
	if p.Anonymous() {
		return Unauthorized("sign in to change your password")
	}
	var v views.PasswordView
	if fl, ok := h.Auth.TakeFlash(p, passwordPath); ok {
		v.Notice = fl.Notice
	}
	return render(c, http.StatusOK, views.PasswordPage(page(c, "Password", "password"), v))
}

// ChangePassword changes the signed-in user's password (POST
// /settings/password): the current password, then the new one twice. Other
// sessions of the user are signed out; this one stays.
func (h *Handler) ChangePassword(c echo.Context) error {
	p := CurrentPrincipal(c)
	if p.Anonymous() {
		return Unauthorized("sign in to change your password")
	}
	if p.Via != "session" {
		// A token is for scripts: it does not change the password its user
		// signs in with (nor sign out the user's sessions).
		return &UserError{Status: http.StatusForbidden, Code: "forbidden",
			Message: "an API token cannot change a password: sign in with the browser, or ask an admin (tessera user set-password)"}
	}
	err := h.changeOwnPassword(c, p, c.FormValue("current_password"), c.FormValue("new_password"), c.FormValue("confirm_password"))
	var ue *UserError
	if errors.As(err, &ue) {
		v := views.PasswordView{Error: ue.Message, Field: ue.Field}
		return render(c, ue.Status, views.PasswordPage(page(c, "Password", "password"), v))
	}
	if err != nil {
		return err
	}
	h.Log.Info("password changed", "user", p.Name, "ip", c.RealIP())
	notice := "Password changed. Your other sessions were signed out."
	if h.Auth.SetFlash(p, Flash{Page: passwordPath, Notice: notice}) {
		return c.Redirect(http.StatusSeeOther, passwordPath)
	}
	return render(c, http.StatusOK, views.PasswordPage(page(c, "Password", "password"), views.PasswordView{Notice: notice}))
}

func (h *Handler) changeOwnPassword(c echo.Context, p *Principal, current, next, confirm string) error {
	switch {
	case current == "":
		return BadRequest("current_password", "enter your current password")
	case next == "":
		return BadRequest("new_password", "enter a new password")
	}
	if err := auth.CheckPasswordPolicy(next); err != nil {
		return BadRequest("new_password", "%v", err)
	}
	if confirm != next {
		return BadRequest("confirm_password", "the two new passwords differ: type the new password twice")
	}
	if next == current {
		return BadRequest("new_password", "the new password is the same as the current one")
	}
	// The current password is checked like a sign-in, under the same
	// failure limits, so a left-open session cannot guess it.
	if _, err := h.Auth.CheckLogin(c.Request().Context(), p.Name, current, c.RealIP()); err != nil {
		var ue *UserError
		if errors.As(err, &ue) && ue.Code == "bad_credentials" {
			return BadRequest("current_password", "your current password is not right")
		}
		var refused *LoginRefused
		if errors.As(err, &refused) {
			c.Response().Header().Set("Retry-After", refused.RetryAfterHeader())
			ue := refused.UserError()
			if refused.Code == "too_many_attempts" {
				ue.Message = "too many wrong passwords; try again in " + max(time.Second, refused.RetryAfter.Round(time.Second)).String()
			}
			ue.Field = "current_password"
			return ue
		}
		return err
	}
	hash, err := auth.HashPassword(next)
	if err != nil {
		return err
	}
	return h.Store.ChangeOwnPassword(c.Request().Context(), p.UserID, hash, p.SessionID, Actor(c), h.Now())
}
