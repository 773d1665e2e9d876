package views

import "strconv"

// LoginView is the sign-in form.
type LoginView struct {
	Name    string
	Next    string
	Error   string
	Expired bool
}

// TokenRow is one API token in a list.
type TokenRow struct {
	ID       int64
	Name     string
	Owner    string
	Prefix   string
	Role     string
	Created  string
	LastUsed string
	Revoked  bool
	Expires  string // "never" or when
	Expired  bool
}

// TokensView is /settings/tokens.
type TokensView struct {
	Tokens    []TokenRow
	NewSecret string // shown once, right after creation
	NewName   string
	Error     string
	Field     string
	Roles     []string // roles the user may give a token
	ShowOwner bool
	// Form is what a refused create asked for, shown again to correct.
	Form struct{ Name, Role, ExpiresIn string }
}

// UserRow is one account on /admin/users.
type UserRow struct {
	ID       int64
	Name     string
	Role     string
	Disabled bool
	Created  string
	Self     bool
	// Locked says why the account is closed by failed sign-ins ("" when
	// it is not): how many, from how many addresses, until when.
	Locked string
}

// AdminUsersView is /admin/users.
type AdminUsersView struct {
	Users   []UserRow
	Notice  string
	Error   string
	Field   string
	Form    struct{ Name, Role string }
	Roles   []string
	Tokens  []TokenRow
	MinPass int
	// Workspace is what the server serves; a reload reads File again.
	Workspace struct {
		Source, File string // File is "" for the embedded demo workspace
		Assets       int
	}
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func disableAction(disabled bool) string {
	if disabled {
		return "enable"
	}
	return "disable"
}

// PasswordView is /settings/password: a notice after a change, or the error
// of a refused form and the field it is about.
type PasswordView struct {
	Notice string
	Error  string
	Field  string
}

// TimezoneView is the display time zone setting (/settings/timezone).
type TimezoneView struct {
	Zones   []string // IANA names offered, UTC first
	Current string   // the stored zone; "" = the browser's
	Browser string   // the browser's zone (tz cookie), "" when unknown
	// Shown is the zone this page's times are in, and Example the time
	// now written in it.
	Shown, Example string
	Notice         string
	Error, Field   string
}
