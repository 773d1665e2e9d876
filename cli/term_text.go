package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The CLI prints text that users and pipelines stored (backfill titles,
// partition keys, error messages, taint reasons, code versions, run ids,
// sensor and schedule messages) on a terminal. Such text may hold bytes a
// terminal obeys: "\x1b]0;title\x07" retitles the window, "\x1b[2J" clears
// the screen, U+202E turns the rest of the line around. Every table cell and
// sentence the CLI prints therefore goes through termText, by way of sayf
// and sayln (sentences, and rows of a table: newTable, printTable) and of
// errorText (the "error:" line); TestCLIPrintsOnlyThroughTermText holds the
// package to that. --json prints JSON, which escapes them itself.

// termText is s with every character a terminal could obey shown as its Go
// escape (ESC as \x1b, BEL as \a, U+202E as \u202e) instead: C0 controls
// (tab and newline too: a value is one cell, one line), DEL, C1 controls,
// bytes that are not UTF-8, the line and paragraph separators U+2028 and
// U+2029, and the marks that override the direction of text (U+061C,
// U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069). Other text is left
// as it is, backslashes included.
func termText(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || unsafeRune(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for s = s[i:]; s != ""; {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// unsafeRune says whether termText escapes r.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// safeArg formats its value as fmt would under the same verb, flags, width
// and precision, then passes the result through termText.
type safeArg struct{ v any }

func (a safeArg) Format(f fmt.State, verb rune) {
	io.WriteString(f, termText(fmt.Sprintf(fmt.FormatString(f, verb), a.v)))
}

func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = safeArg{a}
	}
	return out
}

// sayf is fmt.Fprintf for what the CLI prints: the format is the CLI's own
// (its tabs separate a table's cells, its newlines end lines), each argument
// is shown through termText.
func sayf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, safeArgs(args)...)
}

// sayln is fmt.Fprintln with each argument shown through termText.
func sayln(w io.Writer, args ...any) (int, error) {
	return fmt.Fprintln(w, safeArgs(args)...)
}

// errorText is an error's message for the "error:" line: termText line by
// line, as some messages list problems one a line.
func errorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = termText(l)
	}
	return strings.Join(lines, "\n")
}
