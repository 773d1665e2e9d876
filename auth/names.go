package auth

import (
	"fmt"
	"strings"
	"unicode"
)

// FieldError is why a value the user gave is not acceptable: the field it
// concerns ("name") and what is wrong, in words every surface can show.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Message }

func invalid(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// MaxUserNameLength is the longest user name, in bytes.
const MaxUserNameLength = 64

// ValidateUserName reports why a user name is not acceptable: 1–64
// characters of letters, digits, '.', '_', '-' and '@'.
func ValidateUserName(name string) error {
	if name == "" {
		return invalid("name", "the user name is empty")
	}
	if len(name) > MaxUserNameLength {
		return invalid("name", "the user name is longer than 64 characters")
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-@", r)) {
			return invalid("name", "the user name may only hold letters, digits and . _ - @ (got %q)", name)
		}
	}
	return nil
}

// ValidateTokenName reports why a token label is not acceptable.
func ValidateTokenName(name string) error {
	if strings.TrimSpace(name) == "" {
		return invalid("name", "the token name is empty")
	}
	if len(name) > 100 {
		return invalid("name", "the token name is longer than 100 characters")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return invalid("name", "the token name holds control characters")
		}
	}
	return nil
}
