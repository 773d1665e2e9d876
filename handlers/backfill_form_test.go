package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

func TestNewBackfillPrefillAndPreview(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	doc := okPage(t, env, c, "/backfills/new?asset=t.daily&start=2025-01-01&end=2025-01-20")
	if doc.Find(`[data-testid="asset-t.daily"]`).AttrOr("checked", "no") == "no" {
		t.Error("asset not prefilled")
	}
	if doc.Find(`[data-testid="start"]`).AttrOr("value", "") != "2025-01-01" || doc.Find(`[data-testid="end"]`).AttrOr("value", "") != "2025-01-20" {
		t.Error("range not prefilled")
	}
	if got := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); got != "20" {
		t.Errorf("prefilled preview shows %q partitions, want 20", got)
	}
	if doc.Find(`[data-testid="preview-grid"]`).Length() != 1 {
		t.Error("the preview has no mini grid of the selection")
	}
	if doc.Find(`[data-testid="idempotency-key"]`).AttrOr("value", "") == "" {
		t.Error("no idempotency key in the form")
	}
	if doc.Find(`form[data-testid="backfill-form"] input[name="_csrf"]`).AttrOr("value", "") == "" {
		t.Error("the form has no CSRF token")
	}
	// The live preview (htmx) answers the panel alone.
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"2"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	form.Set("_csrf", env.CSRF(t, c))
	code, pdoc := pgLivePreview(t, env, c, form)
	if code != http.StatusOK || pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", "") != "5" || pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", "") != "3" {
		t.Errorf("htmx preview: status %d, partitions %q chunks %q", code, pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""), pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", ""))
	}
	if pdoc.Find("header.top").Length() != 0 {
		t.Error("the htmx preview renders the page frame")
	}
	// Viewers may preview but are not offered Launch.
	_, vdoc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/new?asset=t.daily")
	if vdoc.Find(`[data-testid="launch"]`).Length() != 0 || vdoc.Find(`[data-testid="launch-not-allowed"]`).Length() != 1 {
		t.Error("a viewer is offered Launch")
	}
}

func pgCountBackfills(t *testing.T, env *testkit.Env) int {
	t.Helper()
	return env.Count(t, `SELECT COUNT(*) FROM backfills`)
}

func TestLaunchBadInputCreatesNothing(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	base := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}, "idempotency_key": {"k-bad"}}
	cases := []struct{ set, value, field string }{
		{"chunk_size", "zero", "chunk_size"},
		{"chunk_size", "0", "chunk_size"},
		{"chunk_size", "1000000", "chunk_size"},
		{"max_concurrent_runs", "-3", "max_concurrent_runs"},
		{"priority", "high", "priority"},
		{"start", "2025-13-45", "start"},
		{"end", "2024-01-01", "end"},
		{"asset", "", "assets"},
		{"asset", "no.such", "assets"},
		{"selector", "weird", "selector"},
		{"dimension", "region", "dimension"},
		{"title", strings.Repeat("x", 201), "title"},
	}
	for _, tc := range cases {
		for _, path := range []string{"/backfills", "/backfills/preview"} {
			form := url.Values{}
			for k, v := range base {
				form[k] = v
			}
			if tc.value == "" {
				form.Del(tc.set)
			} else {
				form.Set(tc.set, tc.value)
			}
			resp := env.SessionPost(t, c, path, form)
			doc := pgDoc(t, resp)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s with %s=%q: status %d", path, tc.set, tc.value, resp.StatusCode)
			}
			if doc.Find(`[data-testid="error-`+tc.field+`"]`).Length() != 1 {
				t.Errorf("%s with %s=%q: no message next to %s", path, tc.set, tc.value, tc.field)
			}
			if doc.Find(`form[data-testid="backfill-form"]`).Length() != 1 {
				t.Errorf("%s with %s=%q: the form is not rendered again", path, tc.set, tc.value)
			}
		}
	}
	// Explicit list with an unknown key.
	// The message names the line (blank lines count as lines).
	form := url.Values{"asset": {"t.daily"}, "selector": {"explicit"}, "keys": {"2025-01-01\n\n2025-01-01\nnot-a-day"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	for _, path := range []string{"/backfills", "/backfills/preview"} {
		doc := pgDoc(t, env.SessionPost(t, c, path, form))
		if msg := doc.Find(`[data-testid="error-keys"]`).Text(); !strings.HasPrefix(strings.TrimSpace(msg), "line 4: ") || !strings.Contains(msg, "not-a-day") {
			t.Errorf("%s: an unknown explicit key's message next to the keys: %q", path, msg)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("bad input created %d backfills", n)
	}
	// A viewer may not launch; a missing or forged CSRF token is refused.
	good := url.Values{}
	for k, v := range base {
		good[k] = v
	}
	if resp := env.SessionPost(t, env.Client(t, auth.RoleViewer), "/backfills", good); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer launch: status %d", resp.StatusCode)
	}
	for _, tok := range []string{"", "forged-token"} {
		f := url.Values{}
		for k, v := range good {
			f[k] = v
		}
		resp, err := c.PostForm(env.URL+"/backfills", pgWithCSRF(f, tok))
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CSRF %q: status %d", tok, resp.StatusCode)
		}
		if !strings.Contains(strings.ToLower(body), "csrf") && !strings.Contains(strings.ToLower(body), "token") {
			t.Errorf("CSRF %q refused without a clear message: %.200s", tok, body)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("refused launches created %d backfills", n)
	}
}

func pgWithCSRF(f url.Values, tok string) url.Values {
	if tok != "" {
		f.Set("_csrf", tok)
	}
	return f
}

func TestLaunchIsIdempotent(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}, "idempotency_key": {"bfk_double"}}
	var locs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := env.SessionPost(t, c, "/backfills", form)
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("launch: status %d", resp.StatusCode)
			}
			locs = append(locs, resp.Header.Get("Location"))
		}()
	}
	wg.Wait()
	if n := pgCountBackfills(t, env); n != 1 {
		t.Fatalf("a triple submit created %d backfills", n)
	}
	for _, l := range locs[1:] {
		if l != locs[0] || !strings.HasPrefix(l, "/backfills/bf_") {
			t.Fatalf("redirects differ: %v", locs)
		}
	}
}

// TestNewBackfillFillGaps: "Fill gaps" on the new-backfill page shows the
// same ranges as the gaps search and launches a backfill of exactly those
// partitions; without a watermark it says how to record one and creates
// nothing.
func TestNewBackfillFillGaps(t *testing.T) {
	t.Parallel()
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
	bfs, err := env.Store.Backfills(t.Context(), nil, "", 0, 10)
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
	t.Parallel()
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

// TestNewBackfillStatusChoice: the new-backfill form's "Only partitions
// that are" choice selects any set of the API's filter statuses (missing,
// failed, stale, tainted): the preview counts them, the launch creates a
// filter backfill of them, the address prefills them, and an empty or
// unknown status is refused next to the statuses with a 400 that writes
// nothing.
func TestNewBackfillStatusChoice(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	// 01 materialized, 02 failed, 03 materialized then tainted, 04 and 05 missing.
	r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-02","status":"failed","error":"boom"},
		{"asset":"t.daily","partition":"2025-01-03","status":"materialized"}]`)
	if r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/t.daily/partitions/2025-01-03/taint", `{"reason":"bad rows"}`); r.StatusCode != 200 {
		t.Fatalf("taint: %d", r.StatusCode)
	}
	form := func(statuses ...string) url.Values {
		return url.Values{"asset": {"t.daily"}, "selector": {"statuses"}, "status": statuses, "start": {"2025-01-01"}, "end": {"2025-01-05"},
			"chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	}
	for _, tc := range []struct {
		statuses []string
		want     string
	}{
		{[]string{"failed"}, "1"},
		{[]string{"missing"}, "2"},
		{[]string{"tainted"}, "1"},
		{[]string{"tainted", "failed"}, "2"},
		{[]string{"missing", "failed", "tainted"}, "4"},
	} {
		resp := env.SessionPost(t, c, "/backfills/preview", form(tc.statuses...))
		doc := pgDoc(t, resp)
		if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); resp.StatusCode != 200 || n != tc.want {
			t.Errorf("only %v: status %d, preview counts %q partitions, want %s (%s)", tc.statuses, resp.StatusCode, n, tc.want, doc.Find(`[data-testid="preview-error"]`).Text())
		}
		for _, st := range []string{"missing", "failed", "stale", "tainted"} {
			ticked := doc.Find(`input[data-testid="status-` + st + `"]`).Is("[checked]")
			if want := slices.Contains(tc.statuses, st); ticked != want {
				t.Errorf("only %v: status %s ticked %v, want %v", tc.statuses, st, ticked, want)
			}
		}
		if !doc.Find(`input[data-testid="selector-statuses"]`).Is("[checked]") {
			t.Errorf("only %v: the choice 'Only partitions that are' is not ticked", tc.statuses)
		}
	}
	// The live preview (htmx) answers the panel alone with the same count.
	live := form("failed", "tainted")
	live.Set("_csrf", env.CSRF(t, c))
	_, doc := pgLivePreview(t, env, c, live, "X-CSRF-Token", env.CSRF(t, c))
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" || doc.Find("form").Length() != 0 {
		t.Fatalf("live preview of failed and tainted: %q partitions, %d forms", n, doc.Find("form").Length())
	}

	// The address prefills the statuses (status= alone means this choice).
	for _, q := range []string{"?asset=t.daily&selector=statuses&status=failed&status=tainted&start=2025-01-01&end=2025-01-05",
		"?asset=t.daily&status=tainted&status=failed&start=2025-01-01&end=2025-01-05"} {
		_, doc := pgGet(t, env, c, "/backfills/new"+q)
		if !doc.Find(`input[data-testid="selector-statuses"]`).Is("[checked]") || !doc.Find(`input[data-testid="status-failed"]`).Is("[checked]") ||
			!doc.Find(`input[data-testid="status-tainted"]`).Is("[checked]") || doc.Find(`input[data-testid="status-missing"]`).Is("[checked]") {
			t.Errorf("%s: statuses not prefilled", q)
		}
		if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" {
			t.Errorf("%s: preview on load counts %q, want 2", q, n)
		}
	}

	// Launch: a filter backfill of exactly the failed and tainted days.
	launch := form("failed", "tainted")
	launch.Set("idempotency_key", "k-statuses")
	if resp := env.SessionPost(t, c, "/backfills", launch); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	bfs, err := env.Store.Backfills(t.Context(), nil, "", 0, 10)
	if err != nil || len(bfs) != 1 || bfs[0].TotalPartitions != 2 || !strings.Contains(bfs[0].Selector, `"statuses":["failed","tainted"]`) {
		t.Fatalf("backfills %+v %v", bfs, err)
	}

	// Refused, next to the statuses, with a 4xx, writing nothing.
	for _, tc := range []struct {
		statuses []string
		msg      []string
	}{
		{nil, []string{"tick at least one status", "Only partitions that are", "tainted (marked invalid by a user)"}},
		{[]string{"failed", "taintd"}, []string{`unknown status "taintd"`, `did you mean "tainted"`, "missing (never materialized)"}},
		{[]string{"materialized"}, []string{`unknown status "materialized"`}},
	} {
		for _, path := range []string{"/backfills", "/backfills/preview"} {
			resp := env.SessionPost(t, c, path, form(tc.statuses...))
			doc := pgDoc(t, resp)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s with statuses %v: status %d, want 400", path, tc.statuses, resp.StatusCode)
			}
			msg := doc.Find(`[data-testid="error-status"]`).Text()
			for _, w := range tc.msg {
				if !strings.Contains(msg, w) {
					t.Errorf("%s with statuses %v: message %q lacks %q", path, tc.statuses, msg, w)
				}
			}
		}
	}
	if n := pgCountBackfills(t, env); n != 1 {
		t.Fatalf("refused statuses created backfills: %d in all", n)
	}
	// The choices keep their values (links elsewhere use them); the
	// earlier ones that the statuses took in open as those statuses ticked.
	for _, v := range []string{"range", "statuses", "gaps", "explicit"} {
		_, doc := pgGet(t, env, c, "/backfills/new?selector="+v)
		if !doc.Find(`input[data-testid="selector-`+v+`"]`).Is("[checked]") || doc.Find(`[data-testid="error-selector"]`).Length() != 0 {
			t.Errorf("selector=%s is no longer a choice of the form", v)
		}
	}
	if n := doc0(t, env, c, "/backfills/new").Find(`input[name="selector"]`).Length(); n != 4 {
		t.Errorf("the form offers %d selections, want 4 (range, statuses, gaps, explicit)", n)
	}
	for v, want := range map[string]string{"missing_failed": "missing,failed", "stale": "stale", "missing_stale": "missing,stale"} {
		d := doc0(t, env, c, "/backfills/new?selector="+v)
		var ticked []string
		d.Find(`input[name="status"][checked]`).Each(func(_ int, s *goquery.Selection) { ticked = append(ticked, s.AttrOr("value", "")) })
		if !d.Find(`input[data-testid="selector-statuses"]`).Is("[checked]") || strings.Join(ticked, ",") != want || d.Find(`[data-testid="error-selector"]`).Length() != 0 {
			t.Errorf("selector=%s: statuses ticked %v, want %s under Only partitions that are", v, ticked, want)
		}
	}
}

// TestFillGapsPreviewSaysGapsOnce: the "Fill gaps" preview heads its gap
// list once ("Gaps up to the watermark …"); it said "Gaps" twice, a heading
// of the preview above the list's own.
func TestFillGapsPreviewSaysGapsOnce(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-04","status":"materialized"}]`)
	if r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/t.daily/watermark", `{"partition":"2025-01-04"}`); r.StatusCode != 200 {
		t.Fatalf("watermark: %d", r.StatusCode)
	}
	// As the gaps page's "Backfill these gaps" opens it.
	_, gp := pgGet(t, env, c, "/assets/t.daily/gaps")
	href, ok := gp.Find(`[data-testid="backfill-gaps"]`).Attr("href")
	if !ok {
		t.Fatal("no Backfill these gaps link")
	}
	_, doc := pgGet(t, env, c, href)
	pv := doc.Find(`[data-testid="preview-gaps"]`)
	if pv.Length() != 1 {
		t.Fatalf("no gap list in the preview: %s", doc.Find(`[data-testid="preview"]`).Text())
	}
	var heads []string
	doc.Find(`[data-testid="preview"]`).Find("h1, h2, h3, h4").Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(strings.ToLower(s.Text()), "gaps") {
			heads = append(heads, strings.Join(strings.Fields(s.Text()), " "))
		}
	})
	if len(heads) != 1 || !strings.HasPrefix(heads[0], "Gaps up to the watermark 2025-01-04") {
		t.Fatalf("gap headings in the preview %q, want one: Gaps up to the watermark 2025-01-04", heads)
	}
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" {
		t.Fatalf("fill gaps preview counts %q, want 2", n)
	}
}

// pgLivePreview asks for the preview panel as the form's live preview
// (htmx) does: the form values as they are, _csrf included, and hdr name,
// value pairs besides HX-Request. It returns the status and the panel.
func pgLivePreview(t *testing.T, env *testkit.Env, c *http.Client, form url.Values, hdr ...string) (int, *goquery.Document) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+"/backfills/preview", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	resp := testkit.Send(t, c, req, hdr...)
	defer resp.Body.Close()
	return resp.StatusCode, pgDoc(t, resp)
}

// TestStaleFilterMatchesStalenessView: the backfill filter "stale" selects
// what the staleness view calls stale — here UPSTREAM_CHANGED and FRESHNESS
// too, not only code changes and taints — and never the missing ones.
func TestStaleFilterMatchesStalenessView(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("s.up", testkit.Daily, "code_version: v1"),
		testkit.Asset("s.down", testkit.Daily, "deps: [s.up]", "code_version: v1"),
	)
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
	doc := pgDoc(t, resp)
	resp.Body.Close()
	if got := doc.Find(`[data-testid="preview-status-stale"] b`).Text(); got != "2" {
		t.Errorf("form preview stale count %q, want 2 (%s)", got, doc.Find(`[data-testid="preview"]`).Text())
	}
	r = env.Post(t, "/api/v1/backfills/preview", `{"assets":["s.down"],"selector":{"type":"filter","statuses":["missing","stale"],"start":"2025-01-01","end":"2025-01-05"},"chunk_size":1,"max_concurrent_runs":1}`)
	json.NewDecoder(r.Body).Decode(&pv)
	if pv.TotalPartitions != 4 {
		t.Fatalf("missing and stale selects %d, want 4", pv.TotalPartitions)
	}
}

// doc0 is the page at path as c sees it.
func doc0(t *testing.T, env *testkit.Env, c *http.Client, path string) *goquery.Document {
	t.Helper()
	_, d := pgGet(t, env, c, path)
	return d
}

// chunkWS has an hourly and a daily asset: a backfill of both with one
// chunk size of 24 would cut the daily one into chunks of 24 days.
var chunkWS = testkit.Assets(
	testkit.Asset("cs.hourly", `{hourly: {start: "2025-01-01-00:00", end: "2025-01-03-00:00"}}`, "executor: {demo: {duration: 1ms}}"),
	testkit.Asset("cs.daily", "{daily: {start: 2025-01-01, end: 2025-01-15}}", "executor: {demo: {duration: 1ms}}"),
)

// TestNewBackfillChunkSizePerAsset: with two assets ticked, the form takes
// a chunk size for each (chunk_size.ASSET); the preview counts each asset's
// chunks by its own size, the backfill launched cuts them so (a daily chunk
// holds 7 days, an hourly one 24 hours), and a bad size is refused beside
// its field with nothing created. The API takes the same as chunk_sizes
// and refuses a size for an asset the backfill does not name.
func TestNewBackfillChunkSizePerAsset(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, chunkWS, false)
	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"cs.hourly", "cs.daily"}, "selector": {"range"}, "chunk_size": {"24"}, "chunk_size.cs.daily": {"7"},
		"max_concurrent_runs": {"2"}, "priority": {"0"}, "title": {"two sizes"}}
	doc := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	chunks := map[string]string{}
	doc.Find(`[data-testid="preview-asset"]`).Each(func(_ int, s *goquery.Selection) {
		chunks[s.AttrOr("data-asset", "")] = strings.TrimSpace(s.Find("td").Eq(2).Text())
	})
	if chunks["cs.hourly"] != "2" || chunks["cs.daily"] != "2" {
		t.Fatalf("preview chunks %v, want 2 of 24 hours and 2 of 7 days", chunks)
	}
	for _, bad := range []struct{ v, want string }{{"0", "at least 1"}, {"seven", "whole number"}} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("chunk_size.cs.daily", bad.v)
		d := pgDoc(t, env.SessionPost(t, c, "/backfills", f))
		if msg := d.Find(`[data-testid="error-chunk_size.cs.daily"]`).Text(); !strings.Contains(msg, "chunk size of cs.daily") || !strings.Contains(msg, bad.want) {
			t.Errorf("chunk_size.cs.daily=%s: message %q", bad.v, msg)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("bad sizes created %d backfills", n)
	}
	resp := env.SessionPost(t, c, "/backfills", form)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	bfs, err := env.Store.Backfills(t.Context(), nil, "", 0, 10)
	if err != nil || len(bfs) != 1 {
		t.Fatalf("backfills: %d %v", len(bfs), err)
	}
	b := bfs[0]
	segs, err := db.Segments(t.Context(), env.Store.RawReader(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		keys, _, err := eng.SegmentKeys(t.Context(), b, s)
		if err != nil {
			t.Fatal(err)
		}
		size := s.Size(b.ChunkSize)
		if (s.Asset == "cs.daily" && (size != 7 || s.Chunks != 2 || len(keys) != 14)) || (s.Asset == "cs.hourly" && (size != 24 || s.Chunks != 2 || len(keys) != 48)) {
			t.Errorf("segment %s: chunks of %d, %d chunks, %d keys", s.Asset, size, s.Chunks, len(keys))
		}
	}

	// The API: chunk_sizes, checked.
	for body, want := range map[string]string{
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.hourly":3}}`:  "chunk_sizes.cs.hourly",
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.daily":0}}`:   "chunk_sizes.cs.daily",
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.daily":"x"}}`: "chunk_sizes",
	} {
		r := env.Post(t, "/api/v1/backfills", body)
		var e struct {
			Error struct{ Field, Message string }
		}
		decode(t, r, &e)
		if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(e.Error.Field, want) {
			t.Errorf("%s: %d %+v, want 400 on %s", body, r.StatusCode, e.Error, want)
		}
	}
	r := env.Post(t, "/api/v1/backfills", `{"assets":["cs.hourly","cs.daily"],"selector":{"type":"range"},"chunk_size":24,"chunk_sizes":{"cs.daily":7}}`)
	var made struct {
		TotalChunks int64 `json:"total_chunks"`
	}
	decode(t, r, &made)
	if r.StatusCode != http.StatusCreated || made.TotalChunks != 4 {
		t.Errorf("API create with chunk_sizes: %d, %d chunks, want 4", r.StatusCode, made.TotalChunks)
	}
}

// TestPreviewDrawsStaleAsStale: the preview's status bars draw materialized
// partitions that are stale in the stale colour and label ("Materialized,
// stale 3"), as the overview and the asset grid do; before, they were solid
// "materialized" green under a small "of the materialized, 3 stale" (found
// by the UI audit).
func TestPreviewDrawsStaleAsStale(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, staleShortcutsWS, true)
	for _, k := range []string{"a", "b", "c"} {
		mat(t, env, "sc.code", k, "v1", T0) // built with v1, the code is at v2
	}
	_, doc := pgGet(t, env, env.Client(t, auth.RoleOperator), "/backfills/new?asset=sc.code&selector=range")
	bars := doc.Find(`#preview [data-testid="health-bar"]`)
	if bars.Length() < 2 {
		t.Fatalf("%d status bars in the preview, want the selection's and the asset's", bars.Length())
	}
	bars.Each(func(i int, s *goquery.Selection) {
		if label := s.AttrOr("aria-label", ""); !strings.Contains(label, "Materialized, stale 3") {
			t.Errorf("preview bar %d: %q, want its 3 stale partitions drawn as stale", i, label)
		}
	})
	if got := doc.Find(`[data-testid="preview-status-stale"]`).Text(); !strings.Contains(got, "3") {
		t.Errorf("the preview's stale count %q", got)
	}
}

// Launching a backfill needs an account: an anonymous reader of the
// new-backfill form is asked to sign in (and comes back to the form), not
// told about roles; a signed-in viewer is told about the operator role.
func TestNewBackfillAsksAnonymousReadersToSignIn(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: pgWorkspace, Auth: &handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1, AnonymousViewer: true}})
	path := "/backfills/new?asset=t.daily&start=2025-01-01&end=2025-01-02"
	code, doc := pgGet(t, env, env.Anon(), path)
	note := doc.Find(`[data-testid="launch-not-allowed"]`)
	if code != 200 || text(note) != "Sign in to launch a backfill." || strings.Contains(text(note), "role") {
		t.Errorf("anonymous: %d %q, want a sign-in note", code, text(note))
	}
	if href := note.Find(`a[data-testid="launch-sign-in"]`).AttrOr("href", ""); href != "/login?next="+url.QueryEscape(path) {
		t.Errorf("anonymous: sign-in link %q, want /login?next=%s", href, url.QueryEscape(path))
	}
	_, doc = pgGet(t, env, env.Client(t, auth.RoleViewer), path)
	if note := doc.Find(`[data-testid="launch-not-allowed"]`); text(note) != "Launching needs the operator role." || note.Find("a").Length() != 0 {
		t.Errorf("viewer: %q, want the operator role named", text(note))
	}
}
