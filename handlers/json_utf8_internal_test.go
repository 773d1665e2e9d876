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
