package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// TestRunPartitionsSayWhyTheyFailed: a partition the command reported
// failed without a message, and a downstream partition skipped for it, both
// carry a reason on the run page and in the API (they had an empty error).
func TestRunPartitionsSayWhyTheyFailed(t *testing.T) {
	env, eng := pgEnvWith(t, `
assets:
  e.up:
    partitions: {daily: {start: "2025-01-01"}}
    retries: {max_attempts: 1}
    executor:
      command: ['for p in $TESSERA_PARTITIONS; do s=materialized; [ "$p" = 2025-01-02 ] && s=failed; printf "{\"partition\":\"%s\",\"status\":\"%s\"}\n" "$p" "$s" >> "$TESSERA_REPORT"; done']
      shell: true
  e.down:
    partitions: {daily: {start: "2025-01-01"}}
    deps: [e.up]
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms}}
`, true)
	ctx := context.Background()
	cr, err := eng.Create(ctx, jobs.Request{Assets: []string{"e.up", "e.down"}, ChunkSize: 2, MaxConcurrentRuns: 2,
		Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}}, "", "tester")
	if err != nil {
		t.Fatal(err)
	}
	pgWaitState(t, env, cr.Backfill.ID, db.BackfillFailed)
	runs, err := env.Store.Runs(ctx, cr.Backfill.ID, nil, -1, 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	c := env.Client(t, auth.RoleViewer)
	partErr := func(runID, key string) (string, string) {
		resp, err := c.Get(env.URL + "/api/v1/runs/" + runID)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rj struct {
			PartitionList []jobs.PartitionOutcome `json:"partition_list"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&rj); err != nil {
			t.Fatal(err)
		}
		for _, p := range rj.PartitionList {
			if p.Partition == key {
				return p.Status, p.Error
			}
		}
		t.Fatalf("run %s has no partition %s", runID, key)
		return "", ""
	}
	st, msg := partErr(runs[0].ID, "2025-01-02")
	if st != db.StatusFailed || !strings.Contains(msg, "reported failed without an error message") || !strings.Contains(msg, "attempt 1") {
		t.Errorf("reported failure: %s %q", st, msg)
	}
	st, msg = partErr(runs[1].ID, "2025-01-02")
	if st != "upstream_failed" || !strings.Contains(msg, "upstream e.up 2025-01-02 failed") {
		t.Errorf("upstream failure: %s %q", st, msg)
	}
	_, doc := pgGet(t, env, c, "/runs/"+runs[1].ID)
	if txt := doc.Find(`[data-testid="run-partition"][data-state="upstream_failed"]`).Text(); !strings.Contains(txt, "upstream e.up 2025-01-02 failed") {
		t.Errorf("run page row: %q", txt)
	}
}
