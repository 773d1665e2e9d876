package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// UserJSON is an account in API answers (never its password hash).
type UserJSON struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	Disabled  bool   `json:"disabled"`
	CreatedAt string `json:"created_at"`
	// Locked is set while failed sign-ins close the account to addresses
	// that did not sign in to it before; {"unlock": true} lifts it.
	Locked *LockJSON `json:"locked,omitempty"`
}

// LockJSON is an account's sign-in lock.
type LockJSON struct {
	Failures  int    `json:"failures"`
	Addresses int    `json:"addresses"`
	Until     string `json:"until"`
}

func userJSON(u db.User) UserJSON {
	return UserJSON{ID: u.ID, Name: u.Name, Role: u.Role, Disabled: u.Disabled, CreatedAt: msTime(u.CreatedAt)}
}

// withLock adds the account's sign-in lock, if any, to its JSON.
func withLock(j UserJSON, locks map[string]db.LoginLock) UserJSON {
	if l, ok := locks[db.LoginAccountKey(j.Name)]; ok {
		j.Locked = &LockJSON{Failures: l.Failures, Addresses: l.Addresses, Until: apiTime(l.Until)}
	}
	return j
}

// TokenJSON is an API token in API answers (the secret only once, at creation).
type TokenJSON struct {
	ID         int64   `json:"id"`
	User       string  `json:"user"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	Role       string  `json:"role"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	ExpiresAt  *string `json:"expires_at"` // null: never
	Expired    bool    `json:"expired"`
	Token      string  `json:"token,omitempty"`
}

func tokenJSON(t db.Token, now time.Time) TokenJSON {
	role := t.UserRole
	if t.Role != nil {
		role = *t.Role
	}
	return TokenJSON{ID: t.ID, User: t.UserName, Name: t.Name, Prefix: t.Prefix, Role: role, CreatedAt: msTime(t.CreatedAt),
		LastUsedAt: msTimePtr(t.LastUsedAt), RevokedAt: msTimePtr(t.RevokedAt), ExpiresAt: msTimePtr(t.ExpiresAt),
		Expired: t.ExpiresAt != nil && !now.Before(db.FromMillis(*t.ExpiresAt))}
}

// idPageOf is the page listPage(c, parseLimit, 0, cursorOf("id")) asked for of rows, in their order: those
// whose id is above after, at most limit of them, as J; next is the cursor
// of the page after it ("" when none).
func idPageOf[R, J any](rows []R, after int64, limit int, id func(R) int64, toJSON func(R) J) (out []J, next string) {
	out = []J{}
	var last int64
	for _, r := range rows {
		if id(r) <= after {
			continue
		}
		if len(out) == limit {
			next = encodeCursor("id", last)
			break
		}
		out = append(out, toJSON(r))
		last = id(r)
	}
	return out, next
}

// APIUsers lists accounts (admin), by id, with cursor pagination.
func (h *Handler) APIUsers(c echo.Context) error {
	after, limit, err := listPage(c, parseLimit, 0, cursorOf("id"))
	if err != nil {
		return err
	}
	users, err := h.Store.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	locks, err := h.Auth.LoginLocks(c.Request().Context())
	if err != nil {
		return err
	}
	out, next := idPageOf(users, after, limit, func(u db.User) int64 { return u.ID },
		func(u db.User) UserJSON { return withLock(userJSON(u), locks) })
	return c.JSON(http.StatusOK, map[string]any{"users": out, "next_cursor": next})
}

// APICreateUser creates an account (admin): {"name", "role", "password"}.
// With an Idempotency-Key, repeating the request returns the same user.
func (h *Handler) APICreateUser(c echo.Context) error {
	var body struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Password string `json:"password"`
	}
	if err := decodeStrict(c, &body, false); err != nil {
		return err
	}
	if err := auth.ValidateUserName(body.Name); err != nil {
		return fieldBadRequest(err)
	}
	if body.Role == "" {
		return BadRequest("role", "role is required: viewer, operator or admin")
	}
	if _, err := auth.ParseRole(body.Role); err != nil {
		return BadRequest("role", "%v", err)
	}
	if err := auth.CheckPasswordPolicy(body.Password); err != nil {
		return BadRequest("password", "%v", err)
	}
	ctx := c.Request().Context()
	key, err := scopedIdempotencyKey(c, "api:user.create:")
	if err != nil {
		return err
	}
	if key != "" {
		if e, err := h.Store.EventByIdempotencyKey(ctx, key); err == nil {
			u, uerr := h.Store.UserByName(ctx, strings.TrimPrefix(e.Subject, "user:"))
			if uerr != nil || !strings.EqualFold(u.Name, body.Name) {
				return Conflict("the Idempotency-Key was already used to create user %s; use a new key for another user", strings.TrimPrefix(e.Subject, "user:"))
			}
			return c.JSON(http.StatusOK, userJSON(u))
		}
	}
	hash, err := auth.HashPassword(body.Password)
	if err != nil {
		return err
	}
	u, err := h.Store.CreateUserKeyed(ctx, body.Name, body.Role, hash, Actor(c), key, h.Now())
	switch {
	case errors.Is(err, db.ErrDuplicateUser):
		return h.userExists(ctx, body.Name)
	case errors.Is(err, db.ErrDuplicateEvent):
		return Conflict("the Idempotency-Key was used by a concurrent request; repeat it to get its result")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusCreated, userJSON(u))
}

// APIUpdateUser changes an account (admin): {"role"}, {"disabled"}, {"password"}.
func (h *Handler) APIUpdateUser(c echo.Context) error {
	u, err := h.userParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Role     *string `json:"role"`
		Disabled *bool   `json:"disabled"`
		Password *string `json:"password"`
		Unlock   *bool   `json:"unlock"`
	}
	if err := decodeStrict(c, &body, false); err != nil {
		return err
	}
	if body.Role == nil && body.Disabled == nil && body.Password == nil && body.Unlock == nil {
		return BadRequest("", "nothing to change: send role, disabled, password or unlock")
	}
	if body.Unlock != nil && !*body.Unlock {
		return BadRequest("unlock", "unlock takes true (forget the account's failed sign-ins); leave it out to keep them")
	}
	p := CurrentPrincipal(c)
	self := p != nil && p.UserID == u.ID
	ctx, now, actor := c.Request().Context(), h.Now(), Actor(c)
	// Validate everything before writing anything.
	if body.Role != nil {
		if *body.Role == "" {
			return BadRequest("role", "role is empty; give viewer, operator or admin, or leave role out to keep the user's role")
		}
		if _, err := auth.ParseRole(*body.Role); err != nil {
			return BadRequest("role", "%v", err)
		}
		if self && *body.Role != "admin" {
			return BadRequest("role", "you cannot remove your own admin role; ask another admin")
		}
	}
	if body.Disabled != nil && *body.Disabled && self {
		return BadRequest("disabled", "you cannot disable your own account")
	}
	var hash string
	if body.Password != nil {
		if err := auth.CheckPasswordPolicy(*body.Password); err != nil {
			return BadRequest("password", "%v", err)
		}
		if hash, err = auth.HashPassword(*body.Password); err != nil {
			return err
		}
	}
	if body.Role != nil {
		if err := h.Store.SetUserRole(ctx, u.ID, *body.Role, actor, now); err != nil {
			return err
		}
	}
	if body.Disabled != nil {
		if err := h.Store.SetUserDisabled(ctx, u.ID, *body.Disabled, actor, now); err != nil {
			return err
		}
	}
	if body.Password != nil {
		if err := h.Store.SetUserPassword(ctx, u.ID, hash, actor, now); err != nil {
			return err
		}
	}
	if body.Unlock != nil {
		if _, err := h.Store.UnlockUser(ctx, u.ID, actor, now); err != nil {
			return err
		}
	}
	u, err = h.Store.UserByID(ctx, u.ID)
	if err != nil {
		return err
	}
	locks, err := h.Auth.LoginLocks(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withLock(userJSON(u), locks))
}

// APITokens lists API tokens: every user's for admins (?user=NAME to narrow),
// your own otherwise.
func (h *Handler) APITokens(c echo.Context) error {
	p, err := signedIn(c)
	if err != nil {
		return err
	}
	after, limit, err := listPage(c, parseLimit, 0, cursorOf("id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var userID int64 = p.UserID
	if name := c.QueryParam("user"); name != "" && p.Role < auth.RoleAdmin && !strings.EqualFold(name, p.Name) {
		// Not silently your own list under another user's name.
		return &UserError{Status: http.StatusForbidden, Code: "forbidden", Field: "user",
			Message: fmt.Sprintf("only admins list other users' tokens; leave out user (or use user=%s) to list your own", p.Name)}
	}
	if p.Role >= auth.RoleAdmin {
		userID = 0
		if name := c.QueryParam("user"); name != "" {
			u, err := h.Store.UserByName(ctx, name)
			if err != nil {
				return withHint(NotFound(""), fmt.Sprintf("no user %q", name), HintUserList, nil)
			}
			userID = u.ID
		}
	}
	ts, err := h.Store.ListTokens(ctx, userID)
	if err != nil {
		return err
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	out, next := idPageOf(ts, after, limit, func(t db.Token) int64 { return t.ID },
		func(t db.Token) TokenJSON { return tokenJSON(t, h.Now()) })
	return c.JSON(http.StatusOK, map[string]any{"tokens": out, "next_cursor": next})
}

// APICreateToken creates a token for yourself, or for {"user"} (admins):
// {"name", "role"?}. The secret is in the answer once. An Idempotency-Key
// that already created a token is refused with 409 (the secret cannot be
// shown again).
func (h *Handler) APICreateToken(c echo.Context) error {
	p, err := signedIn(c)
	if err != nil {
		return err
	}
	var body struct {
		Name      string  `json:"name"`
		Role      *string `json:"role"`
		User      string  `json:"user"`
		ExpiresIn *string `json:"expires_in"`
		ExpiresAt *string `json:"expires_at"`
	}
	if err := decodeStrict(c, &body, false); err != nil {
		return err
	}
	role := ""
	if body.Role != nil {
		// Sent empty, not left out: a client's unset variable must not
		// get a token of the creator's whole role.
		if strings.TrimSpace(*body.Role) == "" {
			return BadRequest("role", "role is empty; give viewer, operator or admin, or leave role out for a token with its user's role")
		}
		role = *body.Role
	}
	expires, err := tokenExpiry(h.Now(), body.ExpiresIn, body.ExpiresAt)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.Store.UserByID(ctx, p.UserID)
	if err != nil {
		return err
	}
	if body.User != "" && !strings.EqualFold(body.User, u.Name) {
		if p.Role < auth.RoleAdmin {
			return &UserError{Status: http.StatusForbidden, Code: "forbidden", Field: "user", Message: "only admins create tokens for other users"}
		}
		if u, err = h.Store.UserByName(ctx, body.User); errors.Is(err, db.ErrNotFound) {
			return BadRequest("user", "no user %q; GET /api/v1/users lists the accounts", body.User)
		} else if err != nil {
			return err
		}
	}
	max := p.Role
	if r, err := auth.ParseRole(u.Role); err == nil && u.ID != p.UserID {
		max = r
	}
	key, err := scopedIdempotencyKey(c, "api:token.create:")
	if err != nil {
		return err
	}
	if key != "" {
		if _, err := h.Store.EventByIdempotencyKey(ctx, key); err == nil {
			return Conflict("the Idempotency-Key already created a token; its secret was shown once and cannot be shown again")
		}
	}
	expiryField := "expires_at" // also when neither is given
	if body.ExpiresIn != nil {
		expiryField = "expires_in"
	}
	secret, t, err := h.createToken(c, u, body.Name, role, expires, expiryField, max, Actor(c), key)
	if errors.Is(err, db.ErrDuplicateEvent) {
		return Conflict("the Idempotency-Key already created a token; its secret was shown once and cannot be shown again")
	}
	if err != nil {
		return err
	}
	t, err = h.Store.TokenByID(ctx, t.ID)
	if err != nil {
		return err
	}
	j := tokenJSON(t, h.Now())
	j.Token = secret
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, j)
}

// APIRevokeToken revokes a token: your own, or anyone's for admins.
func (h *Handler) APIRevokeToken(c echo.Context) error {
	if err := decodeStrict(c, &struct{}{}, true); err != nil {
		return err // {} or no body: a field was meant for another request
	}
	_, t, err := h.tokenToRevoke(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if t.RevokedAt == nil {
		if err := h.Store.RevokeToken(ctx, t.ID, Actor(c), h.Now()); err != nil {
			return err
		}
	}
	t, err = h.Store.TokenByID(ctx, t.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenJSON(t, h.Now()))
}

// tokenToRevoke is the signed-in principal p and the token of the route's
// :id it may revoke: one of its own, or anyone's for an admin (any other
// is not found, like a token that does not exist), and none that may do
// more than the token p is signed in with (canRevoke). The API and the
// tokens page both ask it.
func (h *Handler) tokenToRevoke(c echo.Context) (*Principal, db.Token, error) {
	p, err := signedIn(c)
	if err != nil {
		return nil, db.Token{}, err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return p, db.Token{}, withHint(NotFound(""), fmt.Sprintf("no token %q", c.Param("id")), HintTokenList, nil)
	}
	t, err := h.Store.TokenByID(c.Request().Context(), id)
	if err != nil || (t.UserID != p.UserID && p.Role < auth.RoleAdmin) {
		return p, db.Token{}, withHint(NotFound(""), fmt.Sprintf("no token %d", id), HintTokenList, nil)
	}
	return p, t, canRevoke(p, t)
}

// APIStatus is the status board as JSON under the API (same as /status.json).
func (h *Handler) APIStatus(c echo.Context) error { return h.StatusJSON(c) }
