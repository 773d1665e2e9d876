package handlers

import (
	"strings"
	"unicode"
)

// RoleNames lists every assignable role name, lowest first.
var RoleNames = []string{"viewer", "operator", "admin"}

// ValidateUserName reports why a user name is not acceptable: 1–64
// characters of letters, digits, '.', '_', '-' and '@'.
func ValidateUserName(name string) error {
	if name == "" {
		return BadRequest("name", "the user name is empty")
	}
	if len(name) > 64 {
		return BadRequest("name", "the user name is longer than 64 characters")
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-@", r)) {
			return BadRequest("name", "the user name may only hold letters, digits and . _ - @ (got %q)", name)
		}
	}
	return nil
}

// ValidateTokenName reports why a token label is not acceptable.
func ValidateTokenName(name string) error {
	if strings.TrimSpace(name) == "" {
		return BadRequest("name", "the token name is empty")
	}
	if len(name) > 100 {
		return BadRequest("name", "the token name is longer than 100 characters")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return BadRequest("name", "the token name holds control characters")
		}
	}
	return nil
}
