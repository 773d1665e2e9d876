package handlers

import (
	"fmt"
	"unicode/utf8"
)

// invalidUTF8 is the 400 for a JSON body with bytes that are not UTF-8 in a
// string, key or value (encoding/json would turn them into U+FFFD without a
// word, and the replacement would be stored): it names the value's path
// (selector.keys[3], under root for a bare array) or the object whose field
// name it is, and where the byte is. nil when the body is UTF-8.
func invalidUTF8(body []byte, root string) *UserError {
	off := firstInvalidUTF8(body)
	var where string
	if off >= 0 {
		where = fmt.Sprintf("byte 0x%02x at %s", body[off], bodyPos(body, off))
	} else if off = firstLoneSurrogate(body); off >= 0 {
		// \ud800 alone is valid JSON text but no character: decoding
		// would store U+FFFD in its place.
		where = fmt.Sprintf("the escape %s, half of a UTF-16 surrogate pair, at %s", body[off:off+6], bodyPos(body, off))
	} else {
		return nil
	}
	path, key := utf8Path(body, off, root)
	switch {
	case key && path == "":
		return BadRequest("", "the request body is not valid: a field name holds invalid UTF-8 (%s); send the body in UTF-8", where)
	case key:
		return BadRequest(path, "the request body is not valid: a field name in %s holds invalid UTF-8 (%s); send the body in UTF-8", path, where)
	case path == "":
		return BadRequest("", "the request body is not valid: it holds invalid UTF-8 (%s); send the body in UTF-8", where)
	}
	return BadRequest(path, "the request body is not valid: %s holds invalid UTF-8 (%s); send text in UTF-8 (escape other characters as \\uXXXX)", path, where)
}

// firstInvalidUTF8 is the offset of the first byte of b that does not start
// a valid UTF-8 sequence, -1 when there is none.
func firstInvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// utf8Path is the path of the JSON token of body that holds byte off, and
// whether that token is an object's key (then path is the object's).
func utf8Path(body []byte, off int, root string) (path string, key bool) {
	jsonWalk(body, root, func(obj, _ string, end int64) bool {
		if end > int64(off) {
			path, key = obj, true
			return true
		}
		return false
	}, func(p string, end int64) bool {
		if end > int64(off) {
			path = p
			return true
		}
		return false
	})
	return path, key
}

// firstLoneSurrogate is the offset of the first \uXXXX escape inside a JSON
// string of b that is half of a UTF-16 surrogate pair without its other
// half, -1 when there is none.
func firstLoneSurrogate(b []byte) int {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			r, ok := hex4(i)
			switch {
			case ok && 0xD800 <= r && r <= 0xDBFF:
				if lo, ok := hex4(i + 6); ok && 0xDC00 <= lo && lo <= 0xDFFF {
					i += 11
					continue
				}
				return i
			case ok && 0xDC00 <= r && r <= 0xDFFF:
				return i
			}
			i++ // the escaped character (\" does not end the string)
		}
	}
	return -1
}
