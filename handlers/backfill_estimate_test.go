package handlers_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// TestPreviewOfAMillionPartitionsWritesSeparators: the new-backfill form's
// preview of 1,000,000 partitions writes its counts with thousands
// separators, the estimate's too (it said "had about 5000 partitions a
// run, these have 1000"), and the API keeps its numbers as numbers with the
// same words.
func TestPreviewOfAMillionPartitionsWritesSeparators(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Hour).Add(-1_010_000 * time.Hour)
	ws := testkit.Assets(testkit.Asset("big.hourly", fmt.Sprintf("{hourly: {start: %q}}", start.Format("2006-01-02-15:04")), "code_version: v1", testkit.Shell("true")))
	env, eng := pgEnvWith(t, ws, true)
	key := func(h int) string { return start.Add(time.Duration(h) * time.Hour).Format("2006-01-02-15:04") }
	// One run of 5,000 partitions: the history the estimate rests on.
	b := pgCreateBF(t, eng, "big.hourly", key(0), key(4_999), 5_000)
	pgWaitState(t, env, b.ID, db.BackfillSucceeded)

	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"big.hourly"}, "selector": {"range"}, "start": {key(5_000)}, "end": {key(1_004_999)},
		"chunk_size": {"1000"}, "max_concurrent_runs": {"4"}}
	doc := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	for id, want := range map[string]string{"preview-partitions": "1,000,000", "preview-chunks": "1,000", "preview-runs": "1,000"} {
		if got := text(doc.Find(`[data-testid="` + id + `"]`)); got != want {
			t.Errorf("%s = %q, want %q (%s)", id, got, want, text(doc.Find(`[data-testid="preview-error"]`)))
		}
	}
	est := text(doc.Find(`[data-testid="preview-estimate"]`))
	if !strings.Contains(est, "big.hourly had about 5,000 partitions a run, these have 1,000:") {
		t.Errorf("estimate %q, want the run sizes with separators", est)
	}

	var pv struct {
		TotalPartitions int64     `json:"total_partitions"`
		TotalRuns       int64     `json:"total_runs"`
		Seconds         *float64  `json:"estimated_seconds"`
		Range           []float64 `json:"estimated_range_seconds"`
		Estimate        string    `json:"estimate"`
	}
	r := env.Post(t, "/api/v1/backfills/preview", fmt.Sprintf(`{"assets":["big.hourly"],"selector":{"type":"range","start":%q,"end":%q},"chunk_size":1000,"max_concurrent_runs":4}`, key(5_000), key(1_004_999)))
	decode(t, r, &pv)
	if pv.TotalPartitions != 1_000_000 || pv.TotalRuns != 1_000 || pv.Seconds == nil || len(pv.Range) != 2 || pv.Estimate != est {
		t.Errorf("API preview %+v, want numbers and the page's words %q", pv, est)
	}
}
