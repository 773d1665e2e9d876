package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Decoding JSON bodies, and the 400s that say what is wrong with one in the
// client's terms: the path of the value (selector.keys[3]) and the JSON type
// expected there, never Go's types.

// decodeStrict decodes a JSON body, refusing unknown fields; an empty body
// leaves v as it is when allowEmpty.
func decodeStrict(c echo.Context, v any, allowEmpty bool) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeStrictBody(body, v, allowEmpty)
}

// readBody reads the whole request body, into one buffer of the size the
// request announces (up to maxPresized) rather than one doubled again and
// again.
func readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= maxPresized {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, BadRequest("", "could not read the request body: %v", err)
	}
	return buf.Bytes(), nil
}

// maxPresized is the largest body readBody sizes from Content-Length (the
// server refuses bodies over 32 MB before they reach a handler).
const maxPresized = 64 << 20

// decodeStrictBody is decodeStrict of a body already read.
func decodeStrictBody(body []byte, v any, allowEmpty bool) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if allowEmpty {
			return nil
		}
		return BadRequest("", "the request body is empty; send a JSON object")
	}
	if string(trimmed) == "null" {
		return BadRequest("", "the body must be a JSON object, not null")
	}
	if err := invalidUTF8(body, ""); err != nil {
		return err
	}
	// The body as sent (leading blank lines included), so that the byte,
	// line and column of an error are where the client's editor shows them.
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return decodeError(body, v, err, "")
	}
	if err := trailingData(body, d.InputOffset()); err != nil {
		return err
	}
	if err := exactKeys(body, v, ""); err != nil {
		return err
	}
	return nil
}

// trailingData is the 400 for anything but blanks after the JSON value that
// ended at byte off of body (nil when there is nothing).
func trailingData(body []byte, off int64) *UserError {
	rest := body[off:]
	lead := len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
	if lead == len(rest) {
		return nil
	}
	at := int(off) + lead
	return BadRequest("", "the request body is not valid: unexpected data after the JSON value at %s near %s; send exactly one JSON value (remove the extra text, or wrap several values in an array)",
		bodyPos(body, at), nearText(body, at))
}

// bodyPos names the place of body[i] as the byte offset (counted from 0)
// and the line and column (counted from 1, the column in characters).
func bodyPos(body []byte, i int) string {
	i = min(max(i, 0), len(body))
	lineStart := bytes.LastIndexByte(body[:i], '\n') + 1
	line := 1 + bytes.Count(body[:i], []byte("\n"))
	col := 1 + utf8.RuneCount(body[lineStart:i])
	return fmt.Sprintf("byte offset %d (line %d, column %d)", i, line, col)
}

// nearText quotes a few bytes of body around body[i], as a client would
// search for them.
func nearText(body []byte, i int) string {
	i = min(max(i, 0), len(body))
	from, to := max(i-12, 0), min(i+12, len(body))
	for from > 0 && !utf8.RuneStart(body[from]) {
		from--
	}
	for to < len(body) && !utf8.RuneStart(body[to]) {
		to++
	}
	return strconv.Quote(string(body[from:to]))
}

// unclosed says what is still open at the end of a truncated JSON body: a
// string, or the brackets to close, innermost first, with where each opened.
func unclosed(body []byte) string {
	type open struct {
		c byte
		i int
	}
	var stack []open
	inString, escaped, strStart := false, false, 0
	for i, c := range body {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString, strStart = true, i
		case c == '{' || c == '[':
			stack = append(stack, open{c, i})
		case (c == '}' || c == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	var parts []string
	if inString {
		parts = append(parts, fmt.Sprintf("the string opened at %s is not closed with \"", bodyPos(body, strStart)))
	}
	for k := len(stack) - 1; k >= 0; k-- {
		closer := "}"
		if stack[k].c == '[' {
			closer = "]"
		}
		parts = append(parts, fmt.Sprintf("the %c opened at %s is not closed with %s", stack[k].c, bodyPos(body, stack[k].i), closer))
	}
	if len(parts) == 0 {
		return "a value is missing at the end"
	}
	return strings.Join(parts, "; ")
}

// jsonBodyErr is jsonErr for an error decoding body: a syntax error says
// where it is, and a body that ends too early says so and what is still
// open.
func jsonBodyErr(body []byte, err error) string {
	var se *json.SyntaxError
	truncated := errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(body, " \t\r\n"))) && strings.Contains(se.Error(), "unexpected end"))
	if truncated {
		return fmt.Sprintf("the body ended early, after %d bytes: the JSON is truncated (%s); check that every {, [ and \" is closed and the whole body was sent", len(body), unclosed(body))
	}
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		at := int(se.Offset) - 1
		return fmt.Sprintf("malformed JSON at %s near %s: %s", bodyPos(body, at), nearText(body, at), se.Error())
	}
	return jsonErr(err)
}

// jsonErr rewrites encoding/json's messages into something a user can act on.
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the body must be %s, not a JSON %s", jsonKind(te.Type), te.Value)
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKind(te.Type) == "an integer" && !strings.ContainsAny(n, ".eE") {
			return fmt.Sprintf("%s is out of range: %s", te.Field, n)
		}
		return fmt.Sprintf("%s must be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// fieldsThere says which fields the object holding an unknown field takes:
// known, or none (an action such as pause, whose body is {} or nothing).
func fieldsThere(known []string) string {
	if len(known) == 0 {
		return "this request takes no fields: send {} or no body"
	}
	return "the fields there are " + strings.Join(known, ", ")
}

// decodeError is the 400 for a body that did not decode into v (a pointer):
// an unknown field or a value of the wrong type is named by its full path,
// array indexes included (selector.keys[3]), under root when the body itself
// is to be named (a bare array of materializations); anything else says what
// is wrong with the JSON.
func decodeError(body []byte, v any, err error, root string) *UserError {
	if path, known, ok := unknownField(body, reflect.TypeOf(v), root); ok {
		return BadRequest(path, "the request body is not valid: unknown field %q; %s", path, fieldsThere(known))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		segs := strings.Split(te.Field, ".")
		if path := typeErrorPath(body, reflect.TypeOf(v), segs, root); path != "" && path != te.Field {
			te2 := *te
			te2.Field = path
			return BadRequest(path, "the request body is not valid: %s", jsonErr(&te2))
		}
	}
	return BadRequest(jsonErrField(err), "the request body is not valid: %s", jsonBodyErr(body, err))
}

// typeErrorPath follows segs (a type error's dotted field) through raw and
// returns the path of the first value there that does not decode into its
// type, with the index of each array element on the way ("" if none).
func typeErrorPath(raw json.RawMessage, t reflect.Type, segs []string, prefix string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return prefix // not an array at all
		}
		for i, it := range items {
			if p := typeErrorPath(it, t.Elem(), segs, fmt.Sprintf("%s[%d]", prefix, i)); p != "" {
				return p
			}
		}
		return ""
	}
	if len(segs) == 0 {
		if t.Kind() == reflect.Map { // a type error's field stops at the map
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) != nil {
				return prefix
			}
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if p := typeErrorPath(obj[k], t.Elem(), nil, prefix+"."+k); p != "" {
					return p
				}
			}
			return ""
		}
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return prefix
		}
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	sub, ok := obj[segs[0]]
	if !ok {
		return ""
	}
	next := segs[0]
	if prefix != "" {
		next = prefix + "." + segs[0]
	}
	switch t.Kind() {
	case reflect.Map:
		return typeErrorPath(sub, t.Elem(), segs[1:], next)
	case reflect.Struct:
		for _, f := range jsonFieldsOf(t) {
			if f.name == segs[0] {
				return typeErrorPath(sub, f.typ, segs[1:], next)
			}
		}
	}
	return ""
}

// jsonField is a struct field as JSON names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFieldsOf lists the fields encoding/json decodes into struct type t.
func jsonFieldsOf(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

// jsonErrField is the JSON field a decoding error is about ("" when none).
func jsonErrField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}

// unknownField finds the first object key in raw that type t has no field
// for, and returns its path (selector.from, items[2].x) and the fields known
// at that place. ok is false when there is none (or raw does not parse).
func unknownField(raw []byte, t reflect.Type, prefix string) (path string, known []string, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", nil, false
		}
		fields := map[string]reflect.Type{}
		for _, f := range jsonFieldsOf(t) {
			fields[f.name] = f.typ
			known = append(known, f.name)
		}
		keys := slices.Sorted(maps.Keys(obj))
		for _, k := range keys {
			if _, found := fields[k]; !found {
				return prefix + k, known, true
			}
		}
		for _, k := range keys {
			if p, kn, found := unknownField(obj[k], fields[k], prefix+k+"."); found {
				return p, kn, true
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", nil, false
		}
		for i, it := range items {
			if p, kn, found := unknownField(it, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i)); found {
				return p, kn, true
			}
		}
	}
	return "", nil, false
}

// jsonKind names what a JSON client must send for a Go type.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// exactKeys is the 400 for a body that decoded into v but names a field in
// another case than its own ("Assets": encoding/json matches names without
// regard to case, so it would have replaced "assets" silently) or names a
// field twice in one object (the last one would win silently). nil when the
// body has neither.
func exactKeys(body []byte, v any, root string) *UserError {
	if path, ok := duplicateKey(body, root); ok {
		return BadRequest(path, "the request body is not valid: field %q appears more than once in the same object; send it once", path)
	}
	if path, known, ok := unknownField(body, reflect.TypeOf(v), root); ok {
		return BadRequest(path, "the request body is not valid: unknown field %q (field names are case-sensitive); %s", path, fieldsThere(known))
	}
	if path, t, ok := nullScalar(body, reflect.TypeOf(v), root); ok {
		return BadRequest(path, "the request body is not valid: %s must be %s, not null", path, jsonKind(t))
	}
	return nil
}

// nullScalar finds the first JSON null in an array or map where t has a
// string, number or boolean (encoding/json leaves those at "", 0 or false
// without a word, so "keys": [null] would have named the partition ""), and
// returns its path. A null field of an object is that field left out.
func nullScalar(raw []byte, t reflect.Type, path string) (string, reflect.Type, bool) {
	for t.Kind() == reflect.Pointer { // the value decoded into
		t = t.Elem()
	}
	return nullIn(raw, t, path, path != "") // a root that is named is a list's item
}

func nullIn(raw []byte, t reflect.Type, path string, item bool) (string, reflect.Type, bool) {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return "", nil, false // null is "absent" there
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if !item {
			return "", nil, false
		}
		switch t.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return path, t, true
		}
		return "", nil, false
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", nil, false
		}
		for _, f := range jsonFieldsOf(t) {
			if v, ok := obj[f.name]; ok {
				if p, ft, found := nullIn(v, f.typ, join(f.name), false); found {
					return p, ft, true
				}
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", nil, false
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if p, ft, found := nullIn(obj[k], t.Elem(), join(k), true); found {
				return p, ft, true
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "", nil, false // json.RawMessage, []byte
		}
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", nil, false
		}
		for i, it := range items {
			if p, ft, found := nullIn(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i), true); found {
				return p, ft, true
			}
		}
	}
	return "", nil, false
}

// duplicateKey finds the first object key that appears twice in the same
// object of body and returns its path (selector.start).
func duplicateKey(body []byte, root string) (dup string, found bool) {
	seen := map[string]map[string]bool{} // object path → its keys
	jsonWalk(body, root, func(obj, k string, _ int64) bool {
		if seen[obj] == nil {
			seen[obj] = map[string]bool{}
		}
		if seen[obj][k] {
			dup, found = joinPath(obj, k), true
			return true
		}
		seen[obj][k] = true
		return false
	}, func(string, int64) bool { return false })
	return dup, found
}
