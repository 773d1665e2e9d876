package auth

import (
	"strings"
	"testing"
)

func TestCheckPasswordPolicy(t *testing.T) {
	for pw, want := range map[string]string{
		"":                        "empty",
		"short":                   "too short",
		strings.Repeat(" ", 10):   "only spaces",
		strings.Repeat("a", 12):   "repeats",
		"abababababab":            "repeats",
		strings.Repeat("x", 1000): "too long",
		"correct-horse-battery":   "",
		"ten chars!":              "",
	} {
		err := CheckPasswordPolicy(pw)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", pw, err, want)
		}
	}
}
