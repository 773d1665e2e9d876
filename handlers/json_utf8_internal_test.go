package handlers

import "testing"

// A surrogate escape is refused only alone: a pair is a character, and
// escapes outside strings or after an escaped backslash are not escapes.
func TestFirstLoneSurrogate(t *testing.T) {
	for body, want := range map[string]int{
		`{"a":"\ud83d\ude00"}`: -1,
		`{"a":"\\ud800"}`:      -1,
		`{"a":"x\ud800"}`:      7,
		`{"a":"\ude00"}`:       6,
		`{"a":"\ud83dz"}`:      6,
		`{"a":"\u00e9"}`:       -1,
	} {
		if got := firstLoneSurrogate([]byte(body)); got != want {
			t.Errorf("firstLoneSurrogate(%s) = %d, want %d", body, got, want)
		}
	}
}

// One walker finds both a duplicate key and the token holding a byte, by
// the path a user reads (nested objects and arrays, a bare array's root).
func TestJSONWalkPaths(t *testing.T) {
	for _, c := range []struct {
		body, root, want string
	}{
		{`{"a":1,"b":{"c":[1,{"d":2,"d":3}]}}`, "", "b.c[1].d"},
		{`[{"x":1},{"x":1,"x":2}]`, "items", "items[1].x"},
		{`{"a":{"b":1},"c":{"b":1}}`, "", ""}, // the same key in two objects is not a duplicate
	} {
		got, ok := duplicateKey([]byte(c.body), c.root)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("duplicateKey(%s) = %q %v, want %q", c.body, got, ok, c.want)
		}
	}
	body := []byte(`{"s":{"keys":["a","b\u00e9"]},"k":1}`)
	if p, key := utf8Path(body, 22, ""); p != "s.keys[1]" || key {
		t.Errorf("utf8Path at offset 22 = %q key %v, want s.keys[1]", p, key)
	}
	if p, key := utf8Path(body, 2, ""); p != "" || !key {
		t.Errorf("utf8Path at the first key = %q key %v, want the root object's key", p, key)
	}
}
