package handlers_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestStaleFilterMatchesStalenessView: the backfill filter "stale" selects
// what the staleness view calls stale — here UPSTREAM_CHANGED and FRESHNESS
// too, not only code changes and taints — and never the missing ones.
func TestStaleFilterMatchesStalenessView(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `
assets:
  s.up:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 1ms}}
  s.down:
    partitions: {daily: {start: "2025-01-01"}}
    deps: [s.up]
    code_version: v1
    executor: {demo: {duration: 1ms}}
`})
	env.StartEngine(t, jobs.Options{})
	t0 := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	// down 01..03 built; up 01 rebuilt after down 01 (UPSTREAM_CHANGED); up 02, 03 before.
	body := `[
	 {"asset":"s.up","partition":"2025-01-02","status":"materialized","at":"` + at(0) + `"},
	 {"asset":"s.up","partition":"2025-01-03","status":"materialized","at":"` + at(0) + `"},
	 {"asset":"s.down","partition":"2025-01-01","status":"materialized","at":"` + at(time.Hour) + `"},
	 {"asset":"s.down","partition":"2025-01-02","status":"materialized","at":"` + at(time.Hour) + `"},
	 {"asset":"s.down","partition":"2025-01-03","status":"materialized","code_version":"v0","at":"` + at(time.Hour) + `"},
	 {"asset":"s.up","partition":"2025-01-01","status":"materialized","at":"` + at(2*time.Hour) + `"}]`
	if r := env.Post(t, "/api/v1/materializations", body); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	r := env.Post(t, "/api/v1/backfills/preview", `{"assets":["s.down"],"selector":{"type":"filter","statuses":["stale"],"start":"2025-01-01","end":"2025-01-05"},"chunk_size":1,"max_concurrent_runs":1}`)
	var pv struct {
		TotalPartitions int64            `json:"total_partitions"`
		Status          map[string]int64 `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&pv); err != nil || r.StatusCode != 200 {
		t.Fatalf("preview: %d %v", r.StatusCode, err)
	}
	// 01 UPSTREAM_CHANGED and 03 CODE_CHANGED; 02 fresh; 04, 05 missing.
	if pv.TotalPartitions != 2 || pv.Status["stale"] != 2 {
		t.Fatalf("stale filter selects %d partitions (status %v), want 2", pv.TotalPartitions, pv.Status)
	}
	// The form's preview says how many of the materialized are stale.
	c := env.Client(t, auth.RoleViewer)
	form := url.Values{"asset": {"s.down"}, "selector": {"stale"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	resp := env.SessionPost(t, c, "/backfills/preview", form)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find(`[data-testid="preview-status-stale"] b`).Text(); got != "2" {
		t.Errorf("form preview stale count %q, want 2 (%s)", got, doc.Find(`[data-testid="preview"]`).Text())
	}
	r = env.Post(t, "/api/v1/backfills/preview", `{"assets":["s.down"],"selector":{"type":"filter","statuses":["missing","stale"],"start":"2025-01-01","end":"2025-01-05"},"chunk_size":1,"max_concurrent_runs":1}`)
	json.NewDecoder(r.Body).Decode(&pv)
	if pv.TotalPartitions != 4 {
		t.Fatalf("missing and stale selects %d, want 4", pv.TotalPartitions)
	}
}
