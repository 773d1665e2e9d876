package catalog

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlErrRe splits a yaml.v3 syntax error into its line (absent for errors
// on the first line) and its message.
var yamlErrRe = regexp.MustCompile(`(?s)^yaml: (?:line (\d+): )?(.*)$`)

// decodeDocuments decodes every YAML document of data into nodes: a syntax
// error anywhere in the file is an error, also in a document after the first.
func decodeDocuments(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

// linearSyntaxSearch is how many lines syntaxProblem tries one by one from
// the line yaml.v3 reported before it bisects the rest of the file.
const linearSyntaxSearch = 64

// syntaxProblem turns a YAML syntax error into a problem with the line (and,
// for tabs, the column) where the file stops being valid YAML, and a hint on
// how to fix it.
//
// yaml.v3 reports the line of the enclosing construct rather than of the
// mistake (for an over-indented key, the line where its mapping started),
// 0-based for parser errors and not at all on the first line. So the line
// is found again: the first line L at or after the reported one where the
// file's first L lines fail with the same message — tried line by line
// near the reported line, then by bisection, so that a large file costs a
// few dozen parses, not one per line.
func syntaxProblem(file string, data []byte, err error) Problem {
	reported, msg := 0, strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlErrRe.FindStringSubmatch(err.Error()); m != nil {
		reported, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(n int) bool { // the first n lines fail with msg
		_, perr := decodeDocuments(bytes.Join(lines[:n], nil))
		if perr == nil {
			return false
		}
		m := yamlErrRe.FindStringSubmatch(perr.Error())
		return m != nil && m[2] == msg
	}
	line := 0
	from := max(reported, 1)
	for n := from; n <= len(lines) && n < from+linearSyntaxSearch; n++ {
		if fails(n) {
			line = n
			break
		}
	}
	if lo, hi := from+linearSyntaxSearch, len(lines); line == 0 && lo < hi && fails(hi) {
		for lo < hi { // the first n in [lo, hi] that fails
			mid := lo + (hi-lo)/2
			if fails(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		line = hi
	}
	if line == 0 { // not found again: what yaml.v3 said, 1-based
		line = reported
		if line == 0 {
			line = 1
		}
	}
	col := 0
	text := ""
	if line <= len(lines) {
		text = strings.TrimRight(string(lines[line-1]), "\r\n")
	}
	hint := syntaxHint(msg, text, &col)
	return Problem{File: file, Line: line, Column: col, Message: "invalid YAML: " + msg + "; " + hint}
}

// syntaxHint says how to fix a YAML syntax error found on the line text;
// for a tab it sets *col to the tab's column.
func syntaxHint(msg, text string, col *int) string {
	indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	if i := strings.IndexByte(indent, '\t'); i >= 0 {
		*col = i + 1
		return "this line is indented with a tab; YAML indentation must use spaces"
	}
	switch {
	case strings.Contains(msg, "tab character"):
		if i := strings.IndexByte(text, '\t'); i >= 0 {
			*col = i + 1
		}
		return "a tab is not allowed here; use spaces"
	case strings.HasPrefix(msg, "found character that cannot start any token"):
		return "a value starts with a character YAML reserves (such as @, ` or %); put the value in quotes"
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		return `a value contains ": " (put the value in quotes, e.g. description: "note: daily"), or the line above lacks the colon after its key`
	case strings.HasPrefix(msg, "did not find expected key"):
		return "this line is indented differently from the keys before it; the keys of one mapping start in the same column"
	case strings.HasPrefix(msg, "did not find expected ',' or '}'"):
		return "a { is not closed with }, or its entries are not separated by commas"
	case strings.HasPrefix(msg, "did not find expected ',' or ']'"):
		return "a [ is not closed with ], or its items are not separated by commas"
	case strings.HasPrefix(msg, "did not find expected '-' indicator"):
		return "the items of one list start in the same column with \"- \""
	case strings.HasPrefix(msg, "block sequence entries are not allowed"):
		return "a list (\"- item\") follows a key that already has a value on its line; put the list on the lines below the key"
	case strings.HasPrefix(msg, "could not find expected ':'"):
		return "a key lacks its colon; write key: value"
	case strings.HasPrefix(msg, "found unexpected end of stream"):
		return "a quote or bracket opened here is never closed"
	case strings.HasPrefix(msg, "did not find expected node content"):
		return "a value is missing here (an empty list or flow item, or a key with nothing after it)"
	case strings.Contains(msg, "UTF-8"), strings.Contains(msg, "UTF-16"):
		return "the file is not UTF-8 text on this line; save it as UTF-8"
	case strings.HasPrefix(msg, "control characters are not allowed"):
		return "this line holds a control character; remove it, or write it as an escape (\\t, \\u0007) inside double quotes"
	case strings.HasPrefix(msg, "unknown anchor"):
		return "define the anchor with &NAME before using it as *NAME"
	}
	return "check the YAML syntax on this line and the ones above it"
}
