package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// jsonWalk reads body's tokens in order, knowing the path of each (root
// for a bare value, selector.keys[3], materializations[1].metadata.rows):
// key is called for each object key with the object's path and the offset
// just after the key, value for each scalar value with its path and the
// offset just after it. It stops when either returns true, at the end of
// the first top-level value, or at malformed JSON.
func jsonWalk(body []byte, root string, key func(obj, k string, end int64) bool, value func(path string, end int64) bool) {
	type level struct {
		obj    bool
		path   string
		expect bool // an object's next token is a key
		index  int
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var stack []*level
	var lastKey string
	child := func() string { // the path of the value that starts now
		if len(stack) == 0 {
			return root
		}
		top := stack[len(stack)-1]
		if !top.obj {
			p := fmt.Sprintf("%s[%d]", top.path, top.index)
			top.index++
			return p
		}
		if top.path == "" {
			return lastKey
		}
		return top.path + "." + lastKey
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if s, ok := tok.(string); ok {
				if key(top.path, s, d.InputOffset()) {
					return
				}
				lastKey, top.expect = s, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{obj: true, path: child(), expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{path: child()})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return
			}
		default:
			if value(child(), d.InputOffset()) || len(stack) == 0 {
				return
			}
		}
		if top := stack[len(stack)-1]; top.obj {
			top.expect = true
		}
	}
}

// joinPath is the path of key k of the object at path obj.
func joinPath(obj, k string) string {
	if obj == "" {
		return k
	}
	return obj + "." + k
}
