package auth

import "fmt"

// Role is what a user may do. Roles are ordered: each includes the ones below.
type Role int

// Roles. RolePublic marks routes that need no sign-in at all (health checks,
// static files, the login page).
const (
	RolePublic Role = iota
	RoleViewer
	RoleOperator
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RolePublic:
		return "public"
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	case "admin":
		return RoleAdmin, nil
	}
	return 0, fmt.Errorf("unknown role %q; use viewer, operator or admin", s)
}

// RoleNames lists every assignable role name, lowest first.
var RoleNames = []string{"viewer", "operator", "admin"}
