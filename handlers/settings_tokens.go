package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// signedIn returns the signed-in principal, or redirects anonymous viewers to
// the login page (tokens belong to accounts).
func signedIn(c echo.Context) (*Principal, error) {
	p := CurrentPrincipal(c)
	if p.Anonymous() {
		return nil, Unauthorized("sign in to manage API tokens")
	}
	return p, nil
}

func fmtAccountTime(loc *time.Location, ms *int64) string {
	if ms == nil {
		return "never"
	}
	return fmtMinute(loc, db.FromMillis(*ms))
}

// TokenRows converts tokens for display, times in loc; those whose expiry
// is not after now are marked expired.
func TokenRows(ts []db.Token, now time.Time, loc *time.Location) []views.TokenRow {
	out := make([]views.TokenRow, 0, len(ts))
	for _, t := range ts {
		role := t.UserRole + " (user's)"
		if t.Role != nil {
			role = *t.Role
		}
		created := t.CreatedAt
		expires := fmtAccountTime(loc, t.ExpiresAt)
		if t.ExpiresAt == nil {
			expires = "never"
		}
		out = append(out, views.TokenRow{ID: t.ID, Name: t.Name, Owner: t.UserName, Prefix: t.Prefix, Role: role,
			Created: fmtAccountTime(loc, &created), LastUsed: fmtAccountTime(loc, t.LastUsedAt), Revoked: t.RevokedAt != nil,
			Expires: expires, Expired: t.ExpiresAt != nil && !now.Before(db.FromMillis(*t.ExpiresAt))})
	}
	return out
}

func (h *Handler) tokensView(c echo.Context, p *Principal) (views.TokensView, error) {
	ts, err := h.Store.ListTokens(c.Request().Context(), p.UserID)
	if err != nil {
		return views.TokensView{}, err
	}
	var roles []string
	for _, r := range auth.RoleNames {
		if rr, _ := auth.ParseRole(r); rr <= p.Role {
			roles = append(roles, r)
		}
	}
	return views.TokensView{Tokens: TokenRows(ts, h.Now(), zoneOfC(c)), Roles: roles}, nil
}

// Tokens lists the user's tokens (GET /settings/tokens).
func (h *Handler) Tokens(c echo.Context) error {
	p, err := signedIn(c)
	if err != nil {
		return err
	}
	v, err := h.tokensView(c, p)
	if err != nil {
		return err
	}
	// Right after creating a token (post/redirect/get), its secret once.
	if fl, ok := h.Auth.TakeFlash(p, tokensPath); ok {
		v.NewSecret, v.NewName = fl.NewSecret, fl.NewName
		c.Response().Header().Set("Cache-Control", "no-store")
	}
	return render(c, http.StatusOK, views.TokensPage(page(c, "API tokens", "settings"), v))
}

const tokensPath = "/settings/tokens"

// formTokenExpiry is when a token made on the form at now expires: its
// expires_in field (e.g. 90d), nil when left empty.
func formTokenExpiry(now time.Time, expiresIn string) (*time.Time, error) {
	if strings.TrimSpace(expiresIn) == "" {
		return nil, nil
	}
	d, err := ParseTokenLifetime(expiresIn)
	if err != nil {
		return nil, BadRequest("expires_in", "Expires in: %v", err)
	}
	at := now.Add(d)
	return &at, nil
}

// CreateTokenFor validates and creates a token for user u at most at role
// max; it returns the secret (shown once).
// expires is when it expires (nil: never).
// Signed in with a token that expires, the new token must expire by then
// (expiryWithinToken).
func (h *Handler) CreateTokenFor(c echo.Context, u db.User, name, role string, expires *time.Time, max auth.Role, actor string) (string, db.Token, error) {
	return h.createToken(c, u, name, role, expires, "expires_in", max, actor, "")
}

// createToken is CreateTokenFor with an optional idempotency key (API);
// expiryField names the field expires came from, for its errors.
func (h *Handler) createToken(c echo.Context, u db.User, name, role string, expires *time.Time, expiryField string, max auth.Role, actor, idemKey string) (string, db.Token, error) {
	name = strings.TrimSpace(name)
	if err := auth.ValidateTokenName(name); err != nil {
		return "", db.Token{}, fieldBadRequest(err)
	}
	userRole, _ := auth.ParseRole(u.Role)
	if role != "" {
		r, err := auth.ParseRole(role)
		if err != nil {
			return "", db.Token{}, BadRequest("role", "%v", err)
		}
		if r > max && max < userRole {
			return "", db.Token{}, BadRequest("role", "a token cannot have a higher role (%s) than the token you are signed in with (%s); sign in with a password or %s token to create it", r, max, roleWithArticle(r))
		}
		if r > max {
			return "", db.Token{}, BadRequest("role", "a token cannot have a higher role (%s) than its user (%s)", r, max)
		}
	} else if max < userRole {
		// Created with a token scoped below its user's role: the new token
		// gets that scope, never more than the credential that made it.
		role = max.String()
	}
	if err := expiryWithinToken(CurrentPrincipal(c), expires, expiryField); err != nil {
		return "", db.Token{}, err
	}
	secret, prefix, hash, err := auth.NewToken()
	if err != nil {
		return "", db.Token{}, err
	}
	t, err := h.Store.CreateTokenKeyed(c.Request().Context(), u.ID, name, prefix, hash, role, expires, actor, idemKey, h.Now())
	return secret, t, err
}

// CreateToken creates a token (POST /settings/tokens) and redirects to
// GET /settings/tokens, which shows its secret once: reloading that page
// neither creates another token nor shows the secret again. A form error is
// answered directly (nothing was created).
func (h *Handler) CreateToken(c echo.Context) error {
	p, err := signedIn(c)
	if err != nil {
		return err
	}
	u, err := h.Store.UserByID(c.Request().Context(), p.UserID)
	if err != nil {
		return err
	}
	name := c.FormValue("name")
	var secret string
	expires, err := formTokenExpiry(h.Now(), c.FormValue("expires_in"))
	if err == nil {
		secret, _, err = h.CreateTokenFor(c, u, name, c.FormValue("role"), expires, p.Role, Actor(c))
	}
	if err == nil && h.Auth.SetFlash(p, Flash{Page: tokensPath, NewSecret: secret, NewName: strings.TrimSpace(name)}) {
		return c.Redirect(http.StatusSeeOther, tokensPath)
	}
	v, verr := h.tokensView(c, p)
	if verr != nil {
		return verr
	}
	status := http.StatusOK
	var ue *UserError
	if errors.As(err, &ue) {
		v.Error, v.Field, status = ue.Message, ue.Field, ue.Status
		v.Form.Name, v.Form.Role, v.Form.ExpiresIn = name, c.FormValue("role"), c.FormValue("expires_in")
	} else if err != nil {
		return err
	} else {
		v.NewSecret, v.NewName = secret, strings.TrimSpace(name)
		c.Response().Header().Set("Cache-Control", "no-store")
	}
	return render(c, status, views.TokensPage(page(c, "API tokens", "settings"), v))
}

// RevokeToken revokes one of the user's tokens; admins may revoke any
// (POST /settings/tokens/:id/revoke).
func (h *Handler) RevokeToken(c echo.Context) error {
	p, t, err := h.tokenToRevoke(c)
	if err != nil {
		return err
	}
	if err := h.Store.RevokeToken(c.Request().Context(), t.ID, Actor(c), h.Now()); err != nil {
		return err
	}
	back := "/settings/tokens"
	if t.UserID != p.UserID {
		back = "/admin/users"
	}
	return c.Redirect(http.StatusSeeOther, back)
}
