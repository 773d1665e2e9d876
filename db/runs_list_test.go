package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// Every filter of the runs list reads an index in the list's order
// (migration 0031): no filter sorts the runs it selects (a temporary
// B-tree) or scans the whole table, so that a page stays a page's work
// among a million-partition backfill's runs.
func TestRunListUsesAnIndexInListOrder(t *testing.T) {
	t.Parallel()
	store := teststore.Open(t)
	ctx := context.Background()
	before := db.RunPos{CreatedAt: 1_700_000_000_000, ID: "run_x"}
	for _, tc := range []struct {
		name  string
		f     db.RunFilter
		index string
	}{
		{"none", db.RunFilter{}, "runs_by_created"},
		{"page", db.RunFilter{Before: before}, "runs_by_created"},
		{"time", db.RunFilter{From: 1, To: 2, Before: before}, "runs_by_created"},
		{"asset", db.RunFilter{Asset: "a", Before: before}, "runs_by_asset"},
		{"asset and time", db.RunFilter{Asset: "a", From: 1, To: 2}, "runs_by_asset"},
		{"state", db.RunFilter{States: []string{db.RunFailed}, Before: before}, "runs_by_state"},
		{"backfill", db.RunFilter{BackfillID: "bf_x", Before: before}, "runs_by_backfill_created"},
		{"backfill and state", db.RunFilter{BackfillID: "bf_x", States: []string{db.RunFailed}}, "runs_by_backfill_created"},
		{"two states", db.RunFilter{States: []string{db.RunFailed, db.RunSucceeded}, Before: before}, "runs_by_state"},
	} {
		plan, err := store.RunListPlan(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		// Several states: each state's rows come in order, at most a page
		// of each; only merging them may sort (two pages, not every run).
		if len(tc.f.States) > 1 {
			if n := strings.Count(text, "INDEX "+tc.index+" (state=?"); n != len(tc.f.States) {
				t.Errorf("%s: %d reads of %s by state, want %d:\n%s", tc.name, n, tc.index, len(tc.f.States), text)
			}
			text = strings.ReplaceAll(text, "USE TEMP B-TREE FOR ORDER BY", "")
		}
		if strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: the plan sorts:\n%s", tc.name, text)
		}
		if strings.Contains(text, "SCAN r\n") || strings.HasSuffix(text, "SCAN r") {
			t.Errorf("%s: the plan scans the runs:\n%s", tc.name, text)
		}
		if !strings.Contains(text, "INDEX "+tc.index) {
			t.Errorf("%s: the plan does not use %s:\n%s", tc.name, tc.index, text)
		}
	}
}
