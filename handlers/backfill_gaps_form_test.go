package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
)

// TestNewBackfillFillGaps: "Fill gaps" on the new-backfill page shows the
// same ranges as the gaps search and launches a backfill of exactly those
// partitions; without a watermark it says how to record one and creates
// nothing.
func TestNewBackfillFillGaps(t *testing.T) {
	env, eng := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	// Materialize 2025-01-01 … 2025-01-10 except the 4th and the 7th-8th.
	var items []string
	for _, d := range []string{"01", "02", "03", "05", "06", "09", "10"} {
		items = append(items, `{"asset":"t.daily","partition":"2025-01-`+d+`","status":"materialized"}`)
	}
	if r := env.Post(t, "/api/v1/materializations", "["+strings.Join(items, ",")+"]"); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	form := url.Values{"asset": {"t.daily"}, "selector": {"gaps"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}

	// No watermark yet: the preview explains, the launch creates nothing.
	doc := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	if msg := doc.Find(`[data-testid="error-selector"]`).Text(); !strings.Contains(msg, "no watermark") || !strings.Contains(msg, "/watermark") {
		t.Fatalf("no-watermark message %q", msg)
	}
	// Said once beside the choice and once in the preview, not three times
	// (the preview repeated it as its gaps' warning; found by the UI audit).
	if n := strings.Count(doc.Text(), "has no watermark"); n != 2 {
		t.Errorf("the no-watermark message appears %d times, want 2", n)
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("%d backfills after a refused preview", n)
	}
	if r := env.Post(t, "/api/v1/assets/t.daily/watermark", `{"partition":"2025-01-09"}`); r.StatusCode != 200 {
		t.Fatalf("watermark: %d", r.StatusCode)
	}
	doc = pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	gaps := doc.Find(`[data-testid="preview-gaps"]`).Text()
	if !strings.Contains(gaps, "2025-01-04") || !strings.Contains(gaps, "2025-01-07") || !strings.Contains(gaps, "2025-01-08") {
		t.Fatalf("preview gaps %q", gaps)
	}
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "3" {
		t.Fatalf("preview counts %s partitions, want 3", n)
	}
	// Launch: a backfill of exactly the three missing days below the watermark.
	resp := env.SessionPost(t, c, "/backfills", form)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	bfs, err := env.Store.Backfills(context.Background(), nil, "", 0, 10)
	if err != nil || len(bfs) != 1 || bfs[0].TotalPartitions != 3 {
		t.Fatalf("backfills %+v %v", bfs, err)
	}
	if !strings.Contains(bfs[0].Selector, `"explicit"`) {
		t.Fatalf("selector %s", bfs[0].Selector)
	}
	_ = eng
	// Two assets: refused next to the asset choice.
	two := url.Values{"asset": {"t.daily", "t.flaky"}, "selector": {"gaps"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	doc = pgDoc(t, env.SessionPost(t, c, "/backfills", two))
	if msg := doc.Find(`[data-testid="error-assets"]`).Text(); !strings.Contains(msg, "one asset") {
		t.Fatalf("two assets: %q", doc.Find(".field-error").Text())
	}
	if n := pgCountBackfills(t, env); n != 1 {
		t.Fatalf("%d backfills after a refused launch", n)
	}
}

func TestNewBackfillMissingAndStale(t *testing.T) {
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized","code_version":"v0"},
		{"asset":"t.daily","partition":"2025-01-02","status":"materialized"}]`)
	if r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	// 01 is stale (code changed), 02 fresh, 03 missing.
	form := url.Values{"asset": {"t.daily"}, "selector": {"missing_stale"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	doc := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" {
		t.Fatalf("missing and stale counts %s partitions, want 2 (%s)", n, doc.Find(`[data-testid="preview-error"]`).Text())
	}
}
