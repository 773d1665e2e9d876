package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/views"
)

// numbersWorkspace: n.daily, 10 days at code version v2, whose hand-made
// history has every health: 3 fresh (one of them with a failed last attempt
// over data still there), 3 stale (2 built by v1, one of them with a failed
// last attempt; 1 tainted), 2 failed without data, 2 missing.
const numbersWorkspace = `assets:
  n.daily:
    partitions: {daily: {start: "2025-01-01", end: "2025-01-11"}}
    code_version: v2
    executor: {demo: {duration: 5ms}}
`

// numbersT0 is when the fixture's history was written.
var numbersT0 = time.Date(2025, 1, 20, 0, 0, 0, 0, time.UTC)

// numbers are the fixture's counts, which every surface must report.
var numbers = struct{ fresh, stale, failed, inProgress, missing, lastFailed, partitions int64 }{3, 3, 2, 0, 2, 2, 10}

// numbersFixture writes the fixture's history through the store's ingest
// path.
func numbersFixture(t *testing.T) *testkit.Env {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: numbersWorkspace})
	seq := 0
	rec := func(key, status, code string) {
		t.Helper()
		a := env.WS.Asset("n.daily")
		idx, err := a.Scheme.Space(numbersT0, nil).Index(key)
		if err != nil {
			t.Fatal(err)
		}
		seq++
		at := numbersT0.Add(time.Duration(seq) * time.Minute)
		res, err := env.Store.RecordMaterializations(context.Background(), []db.Materialization{{AssetID: env.WS.IDs["n.daily"], AssetKey: "n.daily",
			Partition: key, Idx: idx, Status: status, CodeVersion: code, RunID: fmt.Sprintf("run-%d", seq), Source: "test",
			StartedAt: at.Add(-time.Second), At: at, Error: map[bool]string{true: "disk full"}[status == db.StatusFailed]}}, "test", "", at)
		if err != nil || res.Recorded != 1 {
			t.Fatalf("record %s %s: %v %+v", key, status, err, res)
		}
	}
	ok, fail := db.StatusMaterialized, db.StatusFailed
	rec("2025-01-01", ok, "v2")   // fresh
	rec("2025-01-02", ok, "v2")   // fresh
	rec("2025-01-03", ok, "v2")   // fresh, then
	rec("2025-01-03", fail, "v2") // its last attempt failed: still fresh
	rec("2025-01-04", ok, "v1")   // stale: code changed
	rec("2025-01-05", ok, "v1")   // stale: code changed, then
	rec("2025-01-05", fail, "v2") // its last attempt failed: still stale
	rec("2025-01-06", ok, "v2")   // tainted below: stale
	rec("2025-01-07", fail, "v2") // failed, no data
	rec("2025-01-08", fail, "v2") // failed, no data
	// 2025-01-09 and 2025-01-10: missing.
	if r := env.Post(t, "/api/v1/assets/n.daily/partitions/2025-01-06/taint", `{"reason":"wrong currency"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("taint: %d", r.StatusCode)
	}
	return env
}

// page fetches path as a viewer and parses it.
func page(t *testing.T, env *testkit.Env, c *http.Client, path string) *goquery.Document {
	t.Helper()
	resp, body := testkit.Fetch(t, c, "GET", env.URL+path, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// apiJSON fetches an API path with token tok into out.
func apiJSON(t *testing.T, env *testkit.Env, tok, path string, out any) {
	t.Helper()
	resp := env.BearerDo(t, "GET", path, tok, "", "")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, out) != nil {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
}

// TestNumbersAgreeOnEverySurface builds one fixture and checks that the
// overview, the asset page (health bar and staleness panel), the status
// board, its JSON and CSV exports, the badge, the API (assets and
// staleness) and the CLI report the same fresh, stale, failed, in progress
// and missing counts, and that a partition whose last attempt failed over
// data still there reads "Materialized, fresh · last attempt failed" on its
// page instead of "Failed" beside "Fresh".
func TestNumbersAgreeOnEverySurface(t *testing.T) {
	t.Parallel()
	env := numbersFixture(t)
	env.Handler.Now = func() time.Time { return numbersT0.Add(time.Hour) }
	c := env.Client(t, auth.RoleViewer)
	tok := env.Token(t, auth.RoleViewer)
	n := numbers
	want := map[string]int64{"fresh": n.fresh, "stale": n.stale, "failed": n.failed, "in_progress": n.inProgress, "missing": n.missing}
	check := func(surface, word string, got int64) {
		t.Helper()
		if got != want[word] {
			t.Errorf("%s: %s %d, want %d", surface, word, got, want[word])
		}
	}
	count := func(s *goquery.Selection) int64 {
		m := lastNumber.FindString(strings.TrimSpace(s.Text()))
		if m == "" {
			t.Fatalf("not a count: %q", s.Text())
		}
		return atoi(t, strings.ReplaceAll(m, ",", ""))
	}
	segs := map[string]string{"fresh": "materialized", "stale": "stale", "failed": "failed", "in_progress": "in_progress", "missing": "missing"}

	// The overview: totals legend and the asset's row.
	ov := page(t, env, c, "/")
	row := ov.Find(`[data-testid="asset-row"][data-asset="n.daily"]`)
	for word, seg := range segs {
		check("overview legend", word, count(ov.Find(`[data-testid="legend"] [data-testid="count-`+seg+`"]`)))
		check("overview row", word, count(row.Find(`[data-testid="asset-count-`+seg+`"]`)))
	}
	if got := ov.Find(`[data-testid="health-last-failed"]`).Text(); !strings.HasPrefix(got, "2 fresh or stale partitions kept their data") {
		t.Errorf("overview hint on failed last attempts: %q", got)
	}

	// The asset page: health bar, then the staleness panel.
	ap := page(t, env, c, "/assets/n.daily?view=staleness")
	for word, seg := range segs {
		check("asset legend", word, count(ap.Find(`[data-testid="legend"]`).First().Find(`[data-testid="count-`+seg+`"]`)))
	}
	panel := ap.Find(`[data-testid="stale-panel"]`)
	if got := strings.TrimSpace(panel.Find(`[data-testid="stale-total"]`).Text()); got != "3 of 10 partitions stale" {
		t.Errorf("staleness panel: %q, want 3 of 10 partitions stale", got)
	}
	check("staleness panel", "fresh", count(panel.Find(`[data-testid="count-FRESH"]`)))
	check("staleness panel", "failed", count(panel.Find(`[data-testid="stale-failed"]`)))
	check("staleness panel", "missing", count(panel.Find(`[data-testid="stale-missing"]`)))
	if got := count(panel.Find(`[data-testid="count-CODE_CHANGED"]`)) + count(panel.Find(`[data-testid="count-TAINTED"]`)); got != n.stale {
		t.Errorf("staleness panel reasons add up to %d, want %d stale", got, n.stale)
	}
	if got := count(panel.Find(`[data-testid="count-NEVER_MATERIALIZED"]`)); got != n.failed+n.missing {
		t.Errorf("never materialized %d, want failed + missing %d", got, n.failed+n.missing)
	}

	// The status board, its exports and the badge.
	sb := page(t, env, c, "/status")
	srow := sb.Find(`[data-testid="status-row"][data-asset="n.daily"]`)
	check("status board", "fresh", count(srow.Find(`[data-testid="fresh-n"]`)))
	check("status board", "failed", count(srow.Find(`[data-testid="failed-n"]`)))
	check("status board", "missing", count(srow.Find(`[data-testid="missing-n"]`)))
	if srow.Find(`[data-testid="stale-NEVER_MATERIALIZED"]`).Length() != 0 {
		t.Error("the status board lists never materialized partitions as stale")
	}
	var boardStale int64
	srow.Find(`[data-testid^="stale-"]`).Each(func(_ int, s *goquery.Selection) {
		f := strings.Fields(s.Text())
		var v int64
		fmt.Sscan(f[len(f)-1], &v)
		boardStale += v
	})
	check("status board", "stale", boardStale)
	if sb.Find(`[data-testid="status-hint"]`).Length() != 1 {
		t.Error("the status board does not say how it counts")
	}
	var sj struct {
		Assets []struct {
			Asset                         string
			Fresh, Stale, Failed, Missing int64
			InProgress                    int64            `json:"in_progress"`
			LastFailed                    int64            `json:"last_attempt_failed"`
			ByReason                      map[string]int64 `json:"stale_by_reason"`
			Badge                         string
		}
	}
	apiJSON(t, env, tok, "/status.json", &sj)
	if len(sj.Assets) != 1 {
		t.Fatalf("status.json: %+v", sj)
	}
	a := sj.Assets[0]
	check("status.json", "fresh", a.Fresh)
	check("status.json", "stale", a.Stale)
	check("status.json", "failed", a.Failed)
	check("status.json", "in_progress", a.InProgress)
	check("status.json", "missing", a.Missing)
	if a.LastFailed != n.lastFailed || a.ByReason["CODE_CHANGED"]+a.ByReason["TAINTED"] != n.stale {
		t.Errorf("status.json last failed %d, by reason %v", a.LastFailed, a.ByReason)
	}
	if _, ok := a.ByReason["NEVER_MATERIALIZED"]; ok {
		t.Error("status.json counts never materialized partitions as stale")
	}
	if a.Badge != "failing" { // its last attempt (2025-01-08) failed
		t.Errorf("badge %q, want failing", a.Badge)
	}
	resp, body := testkit.Fetch(t, c, "GET", env.URL+"/status/n.daily/badge.svg", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-state="failing"`) {
		t.Errorf("badge.svg: %d %s", resp.StatusCode, body)
	}
	resp, body = testkit.Fetch(t, c, "GET", env.URL+"/status.csv", "")
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if resp.StatusCode != http.StatusOK || err != nil || len(recs) != 2 {
		t.Fatalf("status.csv: %d %v %q", resp.StatusCode, err, body)
	}
	for i, h := range recs[0] {
		if _, ok := want[h]; ok {
			check("status.csv", h, atoi(t, recs[1][i]))
		}
	}

	// The API: assets and staleness.
	var assets struct {
		Assets []struct {
			Key    string
			Counts map[string]int64
		}
	}
	apiJSON(t, env, tok, "/api/v1/assets", &assets)
	for word := range want {
		check("API assets", word, assets.Assets[0].Counts[word])
	}
	if got := assets.Assets[0].Counts["materialized"]; got != n.fresh+n.stale {
		t.Errorf("API materialized %d, want fresh + stale %d", got, n.fresh+n.stale)
	}
	var st map[string]any
	apiJSON(t, env, tok, "/api/v1/assets/n.daily/staleness", &st)
	for word := range want {
		check("API staleness", word, int64(st[word].(float64)))
	}

	// The partitions API: each partition's health adds up to the same.
	var parts struct {
		Partitions []struct {
			Partition, Health string
			LastFailed        bool `json:"last_attempt_failed"`
		}
	}
	apiJSON(t, env, tok, "/api/v1/assets/n.daily/partitions", &parts)
	byHealth := map[string]int64{}
	var partsLastFailed int64
	for _, p := range parts.Partitions {
		byHealth[p.Health]++
		if p.LastFailed {
			partsLastFailed++
		}
	}
	for word := range want {
		check("API partitions", word, byHealth[word])
	}
	if partsLastFailed != n.lastFailed {
		t.Errorf("API partitions: %d with a failed last attempt over data, want %d", partsLastFailed, n.lastFailed)
	}

	// The CLI.
	var out, errb bytes.Buffer
	if code := cli.Execute([]string{"asset", "list", "--server", env.URL, "--token", tok}, &out, &errb); code != 0 {
		t.Fatalf("asset list: %d %s", code, errb.String())
	}
	if !regexp.MustCompile(`(?m)^ASSET\s+PARTITIONS\s+CODE\s+TOTAL\s+FRESH\s+STALE\s+FAILED\s+IN PROGRESS\s+MISSING$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^n\.daily\s+daily.*\s+v2\s+10\s+3\s+3\s+2\s+0\s+2$`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "2 partitions kept their data although their last attempt failed") {
		t.Errorf("asset list:\n%s", out.String())
	}

	out.Reset()
	if code := cli.Execute([]string{"asset", "partitions", "n.daily", "--server", env.URL, "--token", tok}, &out, &errb); code != 0 {
		t.Fatalf("asset partitions: %d %s", code, errb.String())
	}
	if !regexp.MustCompile(`(?m)^2025-01-03\s+fresh, last attempt failed\s`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^2025-01-05\s+stale, last attempt failed\s`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^2025-01-07\s+failed\s`).MatchString(out.String()) {
		t.Errorf("asset partitions:\n%s", out.String())
	}

	// The partition page: fresh, its last attempt failed; and one failed
	// without data.
	pp := page(t, env, c, "/assets/n.daily/partitions/2025-01-03")
	if got := strings.TrimSpace(pp.Find(`[data-testid="partition-status"]`).Text()); !strings.HasSuffix(got, "Materialized, fresh") {
		t.Errorf("partition 2025-01-03 reads %q, want Materialized, fresh", got)
	}
	if pp.Find(`[data-testid="partition-last-failed"]`).Length() != 1 || pp.Find(`[data-testid="stale-reason"]`).AttrOr("data-reason", "") != "FRESH" {
		t.Errorf("partition 2025-01-03 does not say its last attempt failed beside Fresh")
	}
	pp = page(t, env, c, "/assets/n.daily/partitions/2025-01-07")
	if got := strings.TrimSpace(pp.Find(`[data-testid="partition-status"]`).Text()); !strings.HasSuffix(got, "Failed") || pp.Find(`[data-testid="partition-last-failed"]`).Length() != 0 {
		t.Errorf("partition 2025-01-07 reads %q, want Failed", got)
	}
	// The grid draws each tile as the bar counts it.
	tiles := map[string]int64{}
	page(t, env, c, "/assets/n.daily").Find(`[data-testid="grid"] a.t`).Each(func(_ int, s *goquery.Selection) {
		for word, seg := range segs {
			if s.HasClass(views.StatusClass(seg)) {
				tiles[word]++
			}
		}
	})
	for word := range want {
		check("grid tiles", word, tiles[word])
	}
}

// lastNumber is the last count in a text ("R0", "18 failed").
var lastNumber = regexp.MustCompile(`[0-9][0-9,]*`)

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	var v int64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return v
}

// TestBrowserNumbersReadAsCounted: in the browser, a partition whose last
// attempt failed over data still there reads "Materialized, fresh" with
// "last attempt failed" beside it (not "Failed" beside "Fresh"), and the
// overview, the asset page's staleness panel and the status board say how
// they count. Screenshots at 1280 and 390 px wide.
func TestBrowserNumbersReadAsCounted(t *testing.T) {
	t.Parallel()
	env := numbersFixture(t)
	env.Handler.Now = func() time.Time { return numbersT0.Add(time.Hour) }
	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	visible := func(sel string) string {
		return `(() => { const e = document.querySelector('` + sel + `'); return !!e && e.getClientRects().length > 0 && e.innerText.trim() })()`
	}
	for _, w := range []int64{1280, 390} {
		h := map[int64]int64{1280: 800, 390: 844}[w]
		shot := func(name string) {
			testkit.Screenshot(t, ctx, fmt.Sprintf("%s-%d", name, w))
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h), chromedp.Navigate(env.URL+"/assets/n.daily/partitions/2025-01-03")); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, visible(`[data-testid="partition-last-failed"]`)+` === "last attempt failed"`, 30*time.Second, "the partition to say its last attempt failed")
		if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="partition-status"]').innerText.trim()`); !strings.HasSuffix(got, "Materialized, fresh") {
			t.Errorf("%d px: the partition reads %q, want Materialized, fresh", w, got)
		}
		if got := testkit.JS(t, ctx, `document.querySelector('#partition-live').innerText`); strings.Contains(got, "Failed") {
			t.Errorf("%d px: the partition's status line still says Failed: %q", w, got)
		}
		shot("partition-fresh-last-failed")

		if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/")); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, visible(`[data-testid="health-hint"]`)+`.startsWith("Each partition counts once.")`, 30*time.Second, "the overview to say how it counts")
		testkit.WaitJS(t, ctx, visible(`[data-testid="health-last-failed"]`)+`.startsWith("2 fresh or stale partitions kept their data")`, 30*time.Second, "the overview to count the failed last attempts over data")
		shot("overview-counts")

		if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/assets/n.daily?view=staleness")); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, visible(`[data-testid="stale-total"]`)+` === "3 of 10 partitions stale"`, 30*time.Second, "the staleness panel to count 3 stale, as the bar")
		testkit.WaitJS(t, ctx, visible(`[data-testid="stale-hint"]`)+`.includes("2 failed and 2 missing")`, 30*time.Second, "the staleness panel to say never materialized is not stale")
		shot("asset-staleness-counts")

		if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/status")); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, visible(`[data-testid="status-hint"]`)+`.startsWith("Each partition counts once")`, 30*time.Second, "the status board to say how it counts")
		testkit.WaitJS(t, ctx, visible(`[data-testid="nodata"]`)+` === "2 failed · 2 missing"`, 30*time.Second, "the status board to count failed and missing apart from stale")
		shot("status-board-counts")
	}
}
