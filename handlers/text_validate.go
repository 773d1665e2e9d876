package handlers

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// validText refuses free text a user typed (a taint reason) that is longer
// than max characters (not bytes: "é" is one) or holds a control character
// other than a line break (\n, or \r\n as browsers send a textarea's) or a
// tab, which would reach other users' terminals through the CLI as escape
// sequences.
func validText(field, what, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return BadRequest(field, "%s must be at most %d characters (got %d)", what, max, n)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return BadRequest(field, "%s holds a control character (%U at byte %d); write plain text", what, r, i)
	}
	return nil
}

// validLine refuses one-line text a client sends (a code version, a run
// id) that is longer than max characters or holds any control character,
// line breaks and tabs included: it is shown in the CLI's table cells.
func validLine(field, what, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return BadRequest(field, "%s must be at most %d characters (got %d)", what, max, n)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return BadRequest(field, "%s holds a control character (%U at byte %d); send one line of plain text", what, r, i)
	}
	return nil
}
