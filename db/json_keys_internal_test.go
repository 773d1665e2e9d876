package db

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Keys written by AppendJSONStrings, and the backfill.created payload that
// holds them, are the bytes encoding/json writes: replay reads them with
// encoding/json, and the events API shows them as stored.
func TestJSONKeysAreEncodingJSONsBytes(t *testing.T) {
	t.Parallel()
	keys := []string{"2025-01-01", "a b", `q"uote`, `back\slash`, "<b>&amp;</b>", "tab\there", "nul\x00", "é ü", "\u2028\u2029", "bad\xffutf8", "", "emoji 😀", "\x7f"}
	for i := range 2000 {
		keys = append(keys, fmt.Sprintf("2025-%02d-%02d-%02d:00", 1+i%12, 1+i%28, i%24))
	}
	want, _ := json.Marshal(keys)
	if got := append(AppendJSONStrings([]byte("["), keys), ']'); string(got) != string(want) {
		t.Fatalf("AppendJSONStrings wrote\n%s\nencoding/json\n%s", got, want)
	}
	wantMarshalJSON(t, "backfill.created", []BackfillCreated{
		{Backfill: Backfill{ID: "bf_1", Title: "<t>"}, Segments: []Segment{{Pos: 0, Asset: "a", Explicit: true}}, Keys: keys},
		{Backfill: Backfill{ID: "bf_2"}, Ranges: map[int64][]SelRange{0: {{Lo: 1, Hi: 9}}}},
	})
}
