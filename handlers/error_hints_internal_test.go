package handlers

import (
	"fmt"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// Errors are values: each says what went wrong once (Reason) and where to
// look next as a hint, which the API words as an endpoint and a page as a
// page (the CLI words it too: cli/api_errors.go). No surface rewrites
// another's sentence.
func TestErrorWordsPerSurface(t *testing.T) {
	conflict := engineErr(&jobs.InputError{Conflict: true, Field: "expected_state_version", Code: jobs.CodeVersionConflict,
		Msg:    "backfill bf_1 is at version 5 (state PAUSED), not 4: it changed since you read it",
		Params: map[string]string{"backfill": "bf_1", "state": "PAUSED", "version": "5", "expected": "4"}}).(*UserError)
	for _, c := range []struct {
		ue        *UserError
		api, page string
	}{
		{engineErr(&jobs.InputError{Field: "assets[0]", Msg: `unknown asset "x"`, Code: jobs.CodeUnknownAsset, Params: map[string]string{"asset": "x"}}).(*UserError),
			`unknown asset "x"; GET /api/v1/assets lists the declared assets`, `unknown asset "x"; the Assets page lists the declared assets`},
		{conflict,
			"backfill bf_1 is at version 5 (state PAUSED), not 4: it changed since you read it; GET /api/v1/backfills/bf_1 and, if the action still applies, send its state_version",
			"backfill bf_1 changed since you read it: it is now paused; reload the page to see the current state and, if the action still applies, try again"},
		{StoreNotFound(fmt.Errorf("load: %w", &db.NotFoundError{Kind: "backfill", ID: "bf_x"})),
			`backfill "bf_x" not found; list backfills with GET /api/v1/backfills`, `backfill "bf_x" not found; the Backfills page lists every backfill`},
		{withHint(NotFound(""), "bad key", HintAssetPartitions, map[string]string{"asset": "a.b"}),
			`bad key; GET /api/v1/assets/a.b/partitions lists its partitions`, `bad key; the asset's page shows its partitions`},
		{userNotFound("9"), `no user with id "9"; GET /api/v1/users lists the accounts (their id field)`, `no user with id "9"; the Users page lists the accounts`},
		{withHint(NotFound(""), "no token 3", HintTokenList, nil), `no token 3; GET /api/v1/tokens lists your tokens (their id field)`, `no token 3; the API tokens page lists your tokens`},
		{BadRequest("chunk_size", "chunk size must be at least 1, got 0"), "chunk size must be at least 1, got 0", "chunk size must be at least 1, got 0"},
	} {
		if c.ue.Message != c.api || PageText(c.ue) != c.page {
			t.Errorf("API %q\n want %q\npage %q\n want %q", c.ue.Message, c.api, PageText(c.ue), c.page)
		}
	}
	if conflict.Hint != HintRereadBackfill || conflict.Params["backfill"] != "bf_1" || conflict.Reason == "" || conflict.Code != "conflict" {
		t.Errorf("the conflict's values for other surfaces: %+v", conflict)
	}
}
