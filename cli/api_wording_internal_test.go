package cli

import "testing"

// A field name in a server message becomes the command's flag only where it
// stands as a whole identifier, and a list item's field names the list's flag.
func TestCLIMessageReplacesWholeFieldNames(t *testing.T) {
	ff := fieldFlags{"chunk_size": "--chunk-size", "selector.keys": "--partitions", "attempt": "--attempt", "state": "",
		"materializations[].at": "--at", "selector": "chosen by --start/--end"}
	for _, tc := range []struct{ msg, field, want string }{
		{"chunk_size must be between 1 and 9", "chunk_size", "--chunk-size must be between 1 and 9"},
		{"my_chunk_size and chunk_size_max stay, chunk_size goes", "", "my_chunk_size and chunk_size_max stay, --chunk-size goes"},
		{"give keys in selector.keys.", "", "give keys in --partitions."},
		{"key 3 is empty", "selector.keys[3]", "--partitions: key 3 is empty"},
		{"attempt must be 1 to 2", "attempt", "--attempt must be 1 to 2"},
		{"the attempt is gone", "attempt", "--attempt: the attempt is gone"},
		{"it is SUCCEEDED", "state", "it is SUCCEEDED"},
		{"item 2: at is in the future", "materializations[2].at", "--at: item 2: at is in the future"},
		{"the selection is empty", "selector", "the selection is empty (chosen by --start/--end)"},
		{"what is this", "frobnicate", "what is this (field frobnicate)"},
		{"list backfills with GET /api/v1/backfills", "", "list backfills with `tessera backfill list`"},
	} {
		if got := ff.cliMessage(tc.msg, tc.field); got != tc.want {
			t.Errorf("cliMessage(%q, %q) = %q, want %q", tc.msg, tc.field, got, tc.want)
		}
	}
}
