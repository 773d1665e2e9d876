package db_test

import (
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
	ctx := t.Context()
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

// RunList answers the same page on both backends: several states merged
// newest first, after a keyset position, of one backfill.
func TestRunListPagesOnBothBackends(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		for i, r := range []struct {
			id, backfill, state string
			created             int64
		}{
			{"run_a", "bf_1", db.RunFailed, 10},
			{"run_b", "bf_1", db.RunSucceeded, 20},
			{"run_c", "bf_1", db.RunQueued, 30},
			{"run_d", "bf_1", db.RunFailed, 40},
			{"run_e", "bf_2", db.RunFailed, 50},
			{"run_f", "bf_1", db.RunSucceeded, 40},
		} {
			if _, err := store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
				VALUES (?,?,?,?,0,'t.a',1,'f',1,?,3,?,0)`, r.id, "key:"+r.id, r.backfill, i, r.state, r.created); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(f db.RunFilter, limit int) string {
			t.Helper()
			runs, err := store.RunList(ctx, f, limit)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range runs {
				out = append(out, r.ID)
			}
			return strings.Join(out, " ")
		}
		two := db.RunFilter{BackfillID: "bf_1", States: []string{db.RunFailed, db.RunSucceeded}}
		if got := ids(two, 3); got != "run_f run_d run_b" {
			t.Errorf("first page: %q, want run_f run_d run_b", got)
		}
		two.Before = db.RunPos{CreatedAt: 20, ID: "run_b"}
		if got := ids(two, 3); got != "run_a" {
			t.Errorf("second page: %q, want run_a", got)
		}
		if got := ids(db.RunFilter{States: []string{db.RunFailed}, From: 10, To: 50}, 10); got != "run_d run_a" {
			t.Errorf("failed in [10, 50): %q, want run_d run_a", got)
		}
	})
}
