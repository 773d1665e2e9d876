package catalog

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
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
	if strings.Contains(msg, "tab character") {
		if i := strings.IndexByte(text, '\t'); i >= 0 {
			*col = i + 1
		}
		return "a tab is not allowed here; use spaces"
	}
	for _, r := range syntaxHints {
		if (r.prefix != "" && strings.HasPrefix(msg, r.prefix)) || slices.ContainsFunc(r.contains, func(s string) bool { return strings.Contains(msg, s) }) {
			return r.hint
		}
	}
	return "check the YAML syntax on this line and the ones above it"
}

// syntaxHints are the hints of yaml.v3's syntax errors, tried in order: a
// rule is for the messages that start with its prefix or contain one of
// its texts.
var syntaxHints = []struct {
	prefix   string
	contains []string
	hint     string
}{
	{prefix: "found character that cannot start any token", hint: "a value starts with a character YAML reserves (such as @, ` or %); put the value in quotes"},
	{prefix: "mapping values are not allowed", hint: `a value contains ": " (put the value in quotes, e.g. description: "note: daily"), or the line above lacks the colon after its key`},
	{prefix: "did not find expected key", hint: "this line is indented differently from the keys before it; the keys of one mapping start in the same column"},
	{prefix: "did not find expected ',' or '}'", hint: "a { is not closed with }, or its entries are not separated by commas"},
	{prefix: "did not find expected ',' or ']'", hint: "a [ is not closed with ], or its items are not separated by commas"},
	{prefix: "did not find expected '-' indicator", hint: "the items of one list start in the same column with \"- \""},
	{prefix: "block sequence entries are not allowed", hint: "a list (\"- item\") follows a key that already has a value on its line; put the list on the lines below the key"},
	{prefix: "could not find expected ':'", hint: "a key lacks its colon; write key: value"},
	{prefix: "found unexpected end of stream", hint: "a quote or bracket opened here is never closed"},
	{prefix: "did not find expected node content", hint: "a value is missing here (an empty list or flow item, or a key with nothing after it)"},
	{contains: []string{"UTF-8", "UTF-16"}, hint: "the file is not UTF-8 text on this line; save it as UTF-8"},
	{prefix: "control characters are not allowed", hint: "this line holds a control character; remove it, or write it as an escape (\\t, \\u0007) inside double quotes"},
	{prefix: "unknown anchor", hint: "define the anchor with &NAME before using it as *NAME"},
}
