package handlers

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/jobs"
)

// Decoding a backfill request, whose explicit key list may hold a million
// keys (a 20 MB body). decodeStrict would decode them, then walk them three
// more times to name what is wrong (unknown fields, nulls, duplicate
// names), each walk holding copies of every key: seconds and hundreds of
// MB. Here the key list is read straight out of the body in one pass, into
// strings that share one copy of it, and the rest of the body, with the
// list taken out, goes through decodeStrict's checks. Anything the fast
// reading is not sure of (an escape in a key, a key that is not a string,
// malformed JSON) and any error of the rest sends the whole body through
// decodeStrict, so that a bad body is answered exactly as before.

// decodeBackfillRequest decodes the request body into req (its defaults
// set), refusing what decodeStrict refuses, and returns the body's size.
func decodeBackfillRequest(c echo.Context, req *jobs.Request) (int, error) {
	body, err := readBody(c)
	if err != nil {
		return 0, err
	}
	return len(body), decodeBackfillBody(body, req)
}

// decodeBackfillBody is decodeBackfillRequest of a body already read.
func decodeBackfillBody(body []byte, req *jobs.Request) error {
	defaults := *req
	if lo, hi, keys, ok := explicitKeyList(body); ok {
		rest := make([]byte, 0, len(body)-(hi-lo)+2)
		rest = append(append(append(rest, body[:lo]...), "[]"...), body[hi:]...)
		if decodeStrictBody(rest, req, false) == nil {
			req.Selector.Keys = keys
			return emptyRangeBound(rest, "selector")
		}
		*req = defaults
	}
	if err := decodeStrictBody(body, req, false); err != nil {
		return err
	}
	return emptyRangeBound(body, "selector")
}

// explicitKeyList finds the array of selector.keys in body, a JSON object,
// and returns where it is (body[lo:hi], brackets included) and its keys.
// ok is false unless the array holds only strings without escapes or
// control characters, in valid UTF-8 (a key is then its bytes as sent),
// and every byte before it is well-formed JSON.
func explicitKeyList(body []byte) (lo, hi int, keys []string, ok bool) {
	p := &jsonScan{b: body}
	if !p.byte('{') {
		return 0, 0, nil, false
	}
	for {
		name, ok := p.member()
		if !ok {
			return 0, 0, nil, false
		}
		if name != "selector" || !p.peek('{') {
			if !p.skipValue() || !p.next() {
				return 0, 0, nil, false
			}
			continue
		}
		p.i++
		for {
			name, ok := p.member()
			if !ok {
				return 0, 0, nil, false
			}
			if name == "keys" && p.peek('[') {
				lo = p.i
				if keys, ok = p.stringArray(); !ok {
					return 0, 0, nil, false
				}
				return lo, p.i, keys, true
			}
			if !p.skipValue() || !p.next() {
				return 0, 0, nil, false
			}
		}
	}
}

// jsonScan reads well-formed JSON from b at i; every method reports false
// at anything it is not sure of.
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// peek skips blanks and reports whether c comes next.
func (p *jsonScan) peek(c byte) bool {
	p.ws()
	return p.i < len(p.b) && p.b[p.i] == c
}

// byte skips blanks and c.
func (p *jsonScan) byte(c byte) bool {
	if !p.peek(c) {
		return false
	}
	p.i++
	return true
}

// member reads an object member's name and its colon.
func (p *jsonScan) member() (string, bool) {
	if !p.peek('"') {
		return "", false
	}
	s, e, ok := p.plainString()
	if !ok || !p.byte(':') {
		return "", false
	}
	p.ws()
	return string(p.b[s:e]), true
}

// next reads the comma after an object member (there must be one: the
// member looked for is still to come).
func (p *jsonScan) next() bool { return p.byte(',') }

// plainString reads a string at i without escapes or control characters
// and returns where its bytes are.
func (p *jsonScan) plainString() (s, e int, ok bool) {
	p.i++ // the opening quote
	s = p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return s, p.i - 1, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		}
		p.i++
	}
	return 0, 0, false
}

// skipValue skips a value whose strings have no escapes.
func (p *jsonScan) skipValue() bool {
	p.ws()
	depth := 0
	for p.i < len(p.b) {
		switch c := p.b[p.i]; c {
		case '"':
			if _, _, ok := p.plainString(); !ok {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return false
			}
			if depth == 0 {
				p.i++
				return true
			}
		case ',', ':', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return false
			}
		default: // a number, true, false or null
			if depth == 0 {
				for p.i < len(p.b) && strings.IndexByte(",}] \t\r\n", p.b[p.i]) < 0 {
					p.i++
				}
				return true
			}
		}
		p.i++
	}
	return false
}

// stringArray reads an array of plain strings in valid UTF-8 (at least
// one) as strings sharing one copy of the body from the array on.
func (p *jsonScan) stringArray() ([]string, bool) {
	lo := p.i
	rest := string(p.b[lo:])
	keys := make([]string, 0, bytes.Count(p.b[lo:], []byte{'"'})/2)
	p.i++
	for {
		if !p.peek('"') {
			return nil, false
		}
		s, e, ok := p.plainString()
		if !ok {
			return nil, false
		}
		keys = append(keys, rest[s-lo:e-lo])
		if p.byte(']') {
			break
		}
		if !p.byte(',') {
			return nil, false
		}
	}
	return keys, utf8.Valid(p.b[lo:p.i])
}
