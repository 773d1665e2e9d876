package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// CreateUser validates and creates an account (shared by /admin/users and
// the CLI's checks).
func (h *Handler) CreateUser(c echo.Context, name, role, password, actor string) (db.User, error) {
	if err := auth.ValidateUserName(name); err != nil {
		return db.User{}, fieldBadRequest(err)
	}
	if _, err := auth.ParseRole(role); err != nil {
		return db.User{}, BadRequest("role", "%v", err)
	}
	if err := auth.CheckPasswordPolicy(password); err != nil {
		return db.User{}, BadRequest("password", "%v", err)
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return db.User{}, err
	}
	u, err := h.Store.CreateUser(c.Request().Context(), name, role, hash, actor, h.Now())
	if errors.Is(err, db.ErrDuplicateUser) {
		return db.User{}, h.userExists(c.Request().Context(), name)
	}
	return u, err
}

// userExists is the conflict of a user name that is taken. Names are
// case-insensitive, so "OP1" is taken by "op1": the message names the
// account as stored and says why.
func (h *Handler) userExists(ctx context.Context, name string) *UserError {
	u, err := h.Store.UserByName(ctx, name)
	if err != nil || u.Name == name {
		return Conflict("a user named %q already exists", name)
	}
	return Conflict("a user named %q already exists; user names are case-insensitive, so %q is the same name", u.Name, name)
}

func (h *Handler) renderUsers(c echo.Context, status int, v views.AdminUsersView) error {
	ctx := c.Request().Context()
	us, err := h.Store.ListUsers(ctx)
	if err != nil {
		return err
	}
	ts, err := h.Store.ListTokens(ctx, 0)
	if err != nil {
		return err
	}
	locks, err := h.Auth.LoginLocks(ctx)
	if err != nil {
		return err
	}
	self := CurrentPrincipal(c)
	for _, u := range us {
		created := u.CreatedAt
		v.Users = append(v.Users, views.UserRow{ID: u.ID, Name: u.Name, Role: u.Role, Disabled: u.Disabled,
			Created: fmtAccountTime(zoneOfC(c), &created), Self: self != nil && self.UserID == u.ID, Locked: lockText(locks[db.LoginAccountKey(u.Name)], h.Now())})
	}
	v.Tokens = TokenRows(ts, h.Now(), zoneOfC(c))
	v.Roles = auth.RoleNames
	v.MinPass = auth.MinPasswordLength
	ws := h.Workspace()
	v.Workspace.Source, v.Workspace.File, v.Workspace.Assets = ws.Source, ws.Path, len(ws.Assets)
	if v.Form.Role == "" {
		v.Form.Role = "viewer"
	}
	return render(c, status, views.AdminUsersPage(page(c, "Users", "admin"), v))
}

const usersPath = "/admin/users"

// AdminUsers lists accounts (GET /admin/users), with the notice of the form
// that redirected here, once.
func (h *Handler) AdminUsers(c echo.Context) error {
	var v views.AdminUsersView
	if fl, ok := h.Auth.TakeFlash(CurrentPrincipal(c), usersPath); ok {
		v.Notice = fl.Notice
	}
	return h.renderUsers(c, http.StatusOK, v)
}

// formResult re-renders the page with a user error; on success it redirects
// to GET /admin/users with the notice (post/redirect/get: a reload repeats
// nothing).
func (h *Handler) formResult(c echo.Context, err error, notice string, v views.AdminUsersView) error {
	var ue *UserError
	if errors.As(err, &ue) {
		v.Error, v.Field = ue.Message, ue.Field
		return h.renderUsers(c, ue.Status, v)
	}
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("no such user")
	}
	if err != nil {
		return err
	}
	if h.Auth.SetFlash(CurrentPrincipal(c), Flash{Page: usersPath, Notice: notice}) {
		return c.Redirect(http.StatusSeeOther, usersPath)
	}
	return h.renderUsers(c, http.StatusOK, views.AdminUsersView{Notice: notice})
}

// AdminCreateUser creates an account (POST /admin/users).
func (h *Handler) AdminCreateUser(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	role := c.FormValue("role")
	_, err := h.CreateUser(c, name, role, c.FormValue("password"), Actor(c))
	var v views.AdminUsersView
	v.Form.Name, v.Form.Role = name, role
	return h.formResult(c, err, "Created user "+name+".", v)
}

func (h *Handler) userParam(c echo.Context) (db.User, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return db.User{}, userNotFound(c.Param("id"))
	}
	u, err := h.Store.UserByID(c.Request().Context(), id)
	if errors.Is(err, db.ErrNotFound) {
		return u, userNotFound(strconv.FormatInt(id, 10))
	}
	return u, err
}

// userNotFound is the 404 of a user id in a path: the API points at the
// list of accounts and their ids, the page at the Users page.
func userNotFound(id string) *UserError {
	return withHint(NotFound(""), fmt.Sprintf("no user with id %q", id), HintUserList, nil)
}

// AdminSetRole changes a role (POST /admin/users/:id/role).
func (h *Handler) AdminSetRole(c echo.Context) error {
	return h.adminUserAction(c, func(ctx context.Context, u db.User) (string, error) {
		role := c.FormValue("role")
		if _, perr := auth.ParseRole(role); perr != nil {
			return "", BadRequest("role", "%v", perr)
		}
		if p := CurrentPrincipal(c); p != nil && p.UserID == u.ID && role != "admin" {
			return "", BadRequest("role", "you cannot remove your own admin role; ask another admin")
		}
		return u.Name + " is now " + role + ".", h.Store.SetUserRole(ctx, u.ID, role, Actor(c), h.Now())
	})
}

// AdminDisable disables an account and ends its sessions at once
// (POST /admin/users/:id/disable).
func (h *Handler) AdminDisable(c echo.Context) error {
	return h.adminUserAction(c, func(ctx context.Context, u db.User) (string, error) {
		if p := CurrentPrincipal(c); p != nil && p.UserID == u.ID {
			return "", BadRequest("", "you cannot disable your own account")
		}
		return "Disabled " + u.Name + ".", h.Store.SetUserDisabled(ctx, u.ID, true, Actor(c), h.Now())
	})
}

// AdminEnable re-enables an account (POST /admin/users/:id/enable).
func (h *Handler) AdminEnable(c echo.Context) error {
	return h.adminUserAction(c, func(ctx context.Context, u db.User) (string, error) {
		return "Enabled " + u.Name + ".", h.Store.SetUserDisabled(ctx, u.ID, false, Actor(c), h.Now())
	})
}

// AdminUnlock forgets the failed sign-ins that lock an account
// (POST /admin/users/:id/unlock).
func (h *Handler) AdminUnlock(c echo.Context) error {
	return h.adminUserAction(c, func(ctx context.Context, u db.User) (string, error) {
		n, err := h.Store.UnlockUser(ctx, u.ID, Actor(c), h.Now())
		return fmt.Sprintf("Unlocked %s (forgot %d failed sign-ins).", u.Name, n), err
	})
}

// AdminResetPassword sets a new password and ends the user's sessions
// (POST /admin/users/:id/password).
func (h *Handler) AdminResetPassword(c echo.Context) error {
	return h.adminUserAction(c, func(ctx context.Context, u db.User) (string, error) {
		pw := c.FormValue("password")
		if perr := auth.CheckPasswordPolicy(pw); perr != nil {
			return "", BadRequest("password", "%v", perr)
		}
		hash, err := auth.HashPassword(pw)
		if err != nil {
			return "", err
		}
		return "Reset the password of " + u.Name + ".", h.Store.SetUserPassword(ctx, u.ID, hash, Actor(c), h.Now())
	})
}

// adminUserAction runs act on the account of the route's :id (a 404 when
// there is none) and answers the Users form with the notice act returns,
// or with its error (formResult).
func (h *Handler) adminUserAction(c echo.Context, act func(ctx context.Context, u db.User) (notice string, err error)) error {
	u, err := h.userParam(c)
	if err != nil {
		return err
	}
	notice, err := act(c.Request().Context(), u)
	return h.formResult(c, err, notice, views.AdminUsersView{})
}

// AdminReloadWorkspace reads the workspace file again
// (POST /admin/workspace/reload); a file with problems is shown on the page
// and the server keeps the workspace it has.
func (h *Handler) AdminReloadWorkspace(c echo.Context) error {
	ws, err := h.ReloadWorkspace(c.Request().Context(), Actor(c))
	notice := ""
	if err == nil {
		notice = fmt.Sprintf("Workspace reloaded from %s: %s.", ws.Path, views.Num(int64(len(ws.Assets)))+" asset"+plural(int64(len(ws.Assets))))
		if ws.Differs != nil {
			notice += fmt.Sprintf(" It differs from instance %s's in %s, so it was not written to the shared catalog and this instance does not plan until every instance serves the same file.",
				ws.Differs.Instance, strings.Join(ws.Differs.Assets, ", "))
		}
	}
	return h.formResult(c, err, notice, views.AdminUsersView{})
}
