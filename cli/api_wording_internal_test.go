package cli

import "testing"

// A field name in a server message becomes the command's flag only where it
// stands as a whole identifier, and a list item's field names the list's flag.
func TestCLIMessageReplacesWholeFieldNames(t *testing.T) {
	t.Parallel()
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
	} {
		if got := ff.cliMessage(tc.msg, tc.field); got != tc.want {
			t.Errorf("cliMessage(%q, %q) = %q, want %q", tc.msg, tc.field, got, tc.want)
		}
	}
}

// The server's hint (where to look next) is worded by the CLI from its kind
// and parameters; an error without a hint the CLI knows keeps the server's
// message.
func TestAPIErrorWordsItsHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    apiError
		want string
	}{
		{apiError{Status: 404, Message: `backfill "bf_x" not found; list backfills with GET /api/v1/backfills`, Reason: `backfill "bf_x" not found`, Hint: "backfill_list"},
			"server answered 404: backfill \"bf_x\" not found; list backfills with `tessera backfill list`"},
		{apiError{Status: 404, Message: "gone; GET /api/v1/somewhere", Reason: "gone", Hint: "a_new_kind"}, "server answered 404: gone; GET /api/v1/somewhere"},
		{apiError{Status: 400, Message: "plain", Field: "selector.keys[3]", flags: fieldFlags{"selector.keys": "--partitions"}}, "server answered 400: --partitions: plain"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v\n got %q\nwant %q", tc.e, got, tc.want)
		}
	}
}
