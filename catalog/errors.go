package catalog

import (
	"fmt"
	"strings"
)

// KeyError is returned by every function that rejects a partition key.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("partition key %q is not valid for this asset: %s", e.Key, e.Reason)
}

func keyErr(key, format string, args ...any) *KeyError {
	return &KeyError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// RangeError is returned by ParseRange when the end of a range is before its start.
type RangeError struct {
	Start, End string
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("end %s is before start %s", e.End, e.Start)
}

// ParamError is returned by scheme constructors for an invalid parameter.
// Param names the offending parameter as written in the workspace file
// (for example "start" or "key_format"); it may be empty.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

func paramErr(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// Problem is one validation problem found in a workspace file. Line and
// Column are 1-based; 0 when unknown (Column is only set with a Line).
type Problem struct {
	File    string
	Line    int
	Column  int
	Field   string
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists every problem found in a workspace file.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// withArticle puts "a" or "an" before a unit word: "a daily", "an hourly".
func withArticle(word string) string {
	if strings.HasPrefix(word, "hour") || (word != "" && strings.ContainsRune("aeiou", rune(word[0]))) {
		return "an " + word
	}
	return "a " + word
}
