package handlers

import "testing"

// PageMessage says the API's pointers the browser's way and leaves every
// other message as it is.
func TestPageMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`unknown asset "x"; GET /api/v1/assets lists the declared assets`, `unknown asset "x"; the Assets page lists the declared assets`},
		{"backfill bf_1 is at state_version 5 (state PAUSED), not 4: it changed since you read it; GET /api/v1/backfills/bf_1 and, if the action still applies, send its state_version",
			"backfill bf_1 changed since you read it: it is now paused; reload the page to see the current state and, if the action still applies, try again"},
		{`backfill "bf_x" not found; list backfills with GET /api/v1/backfills`, `backfill "bf_x" not found; the Backfills page lists every backfill`},
		{`bad key; GET /api/v1/assets/a.b/partitions lists its partitions`, `bad key; the asset's page shows its partitions`},
		{`no user with id "9"; GET /api/v1/users lists the accounts (their id field)`, `no user with id "9"; the Users page lists the accounts`},
		{`no token 3; GET /api/v1/tokens lists your tokens (their id field)`, `no token 3; the API tokens page lists your tokens`},
		{"chunk size must be at least 1, got 0", "chunk size must be at least 1, got 0"},
	} {
		if got := PageMessage(c.in); got != c.want {
			t.Errorf("PageMessage(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
