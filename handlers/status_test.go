package handlers_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// statusWS is the hand-computed fixture of the status board.
var statusWS = testkit.Assets(
	testkit.Asset("s.static", "{static: [a, b, c, d]}", "group: reports", "code_version: v2", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("s.fresh", "{static: [x]}", "group: reports", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("s.failing", "{static: [y]}", "group: reports", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("s.daily", "{daily: {start: 2025-01-29, end: 2025-02-01}}", "group: finance", "code_version: v1", "freshness: {max_lag: 26h}", "executor: {demo: {duration: 1s}}"),
)

// statusEnvAt is a server on statusWS whose clock reads now.
func statusEnvAt(t *testing.T, now time.Time) *testkit.Env {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS})
	env.Handler.Now = func() time.Time { return now }
	return env
}

func TestStatusBoardNumbersBadgeAndExports(t *testing.T) {
	t.Parallel()
	now := T0.Add(10 * time.Hour)
	env := statusEnvAt(t, now)
	mat(t, env, "s.static", "a", "v2", T0)                            // fresh
	mat(t, env, "s.static", "b", "v1", T0)                            // CODE_CHANGED
	mat(t, env, "s.static", "c", "v2", T0)                            // TAINTED below
	mat(t, env, "s.fresh", "x", "v1", T0)                             // fresh
	record(t, env, "s.failing", "y", db.StatusFailed, "v1", T0)       // NEVER, failing
	mat(t, env, "s.daily", "2025-01-29", "v1", T0.Add(-48*time.Hour)) // fresh (complete window)
	mat(t, env, "s.daily", "2025-01-30", "v1", T0.Add(-30*time.Hour)) // window ended 2025-01-31: fresh
	env.Post(t, "/api/v1/assets/s.static/partitions/c/taint", `{"reason":"wrong currency"}`)

	code, doc := get(t, env, "/status")
	if code != 200 {
		t.Fatalf("status board: %d", code)
	}
	var order []string
	doc.Find(`[data-testid="status-group"][data-group="reports"] [data-testid="status-row"]`).Each(func(_ int, s *goquery.Selection) {
		order = append(order, s.AttrOr("data-asset", ""))
	})
	if strings.Join(order, ",") != "s.failing,s.static,s.fresh" {
		t.Fatalf("worst first: %v", order)
	}
	row := doc.Find(`[data-testid="status-row"][data-asset="s.static"]`)
	if row.Find(`[data-testid="fresh-pct"]`).Text() != "25%" || row.Find(`[data-testid="fresh-n"]`).Text() != "1" || row.Find(`[data-testid="partitions-n"]`).Text() != "4" {
		t.Fatalf("s.static fresh: %q", row.Text())
	}
	// d, never materialized, has no data: missing, not stale.
	if row.Find(`[data-testid="stale-NEVER_MATERIALIZED"]`).Length() != 0 || row.Find(`[data-testid="missing-n"]`).Text() != "1" || row.Find(`[data-testid="failed-n"]`).Text() != "0" {
		t.Fatalf("s.static never materialized: %q", row.Text())
	}
	for reason, want := range map[string]string{"TAINTED": "1", "CODE_CHANGED": "1"} {
		if got := row.Find(`[data-testid="stale-` + reason + `"]`).Text(); !strings.HasSuffix(got, " "+want) {
			t.Fatalf("s.static %s: %q", reason, got)
		}
	}
	if row.Find(`[data-testid="stale-UPSTREAM_CHANGED"]`).Length() != 0 || row.Find(`[data-testid="stale-none"]`).Length() != 0 {
		t.Fatal("zero reasons are not listed")
	}
	// An asset with nothing stale says so instead of an empty cell.
	fresh := doc.Find(`[data-testid="status-row"][data-asset="s.fresh"]`)
	if got := fresh.Find(`[data-testid="stale-none"]`).Text(); got != "none stale" {
		t.Fatalf("s.fresh stale by reason: %q, want none stale", got)
	}
	if href := row.Find(`[data-testid="status-link"]`).AttrOr("href", ""); href != "/assets/s.static?view=staleness" {
		t.Fatalf("link %q", href)
	}
	daily := doc.Find(`[data-testid="status-row"][data-asset="s.daily"]`)
	// 2 of 3 fresh (66%, rounded down; 2025-01-31 never materialized); latest fresh 2025-01-30,
	// whose window ended 2025-01-31 00:00: lag 34h > 26h.
	if daily.Find(`[data-testid="fresh-pct"]`).Text() != "66%" || daily.Find(`[data-testid="latest-fresh"]`).Text() != "2025-01-30" ||
		!strings.Contains(daily.Find(`[data-testid="lag"]`).Text(), "34 h 0 min") || !strings.Contains(daily.Find(`[data-testid="lag"]`).Text(), "over policy") {
		t.Fatalf("s.daily: %q", daily.Text())
	}
	if daily.Find(`[data-testid="sparkline"] polyline`).AttrOr("points", "") == "" {
		t.Fatal("no sparkline")
	}

	// JSON export.
	out, by := statusJSON(t, env)
	s := by["s.static"]
	_, never := s.ByReason["NEVER_MATERIALIZED"]
	if len(out) != 4 || s.Partitions != 4 || s.Fresh != 1 || s.Stale != 2 || s.Missing != 1 || s.Failed != 0 || s.ByReason["TAINTED"] != 1 || s.ByReason["CODE_CHANGED"] != 1 ||
		never || s.FreshShare != 0.25 || s.Badge != "stale 2" || s.LatestFresh != "a" {
		t.Fatalf("status.json s.static: %+v", s)
	}
	if by["s.failing"].Badge != "failing" || by["s.fresh"].Badge != "fresh" || by["s.daily"].LagSeconds == nil || *by["s.daily"].LagSeconds != 34*3600 {
		t.Fatalf("status.json: %+v", by)
	}
	if len(s.Spark) != 30 {
		t.Fatalf("sparkline of %d days", len(s.Spark))
	}

	// CSV export.
	resp, _ := env.Get("/status.csv")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("csv content type %q", ct)
	}
	recs, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || len(recs) != 5 || recs[0][0] != "asset" {
		t.Fatalf("csv: %v %v", recs, err)
	}
	for _, r := range recs[1:] {
		if r[0] == "s.static" && (r[2] != "4" || r[3] != "1" || r[4] != "2" || r[5] != "0" || r[7] != "1" || r[len(r)-1] != "stale 2") {
			t.Fatalf("csv s.static row %v", r)
		}
	}

	// Badges.
	for asset, want := range map[string]string{"s.static": "stale 2", "s.fresh": "fresh", "s.failing": "failing"} {
		resp, b := env.GetBody(t, "/status/"+asset+"/badge.svg")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/svg+xml") || !strings.Contains(string(b), `data-state="`+want+`">`+want+`</text>`) {
			t.Fatalf("badge %s: %s %s", asset, resp.Status, b)
		}
	}
	if resp, _ := env.Get("/status/nope/badge.svg"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("badge of an unknown asset: %s", resp.Status)
	}
}

func TestStatusBoardAccess(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS})
	anon := env.Anon()
	resp := testkit.GetNoBody(t, anon, env.URL+"/status")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("anonymous /status without anonymous viewers: %s", resp.Status)
	}
	viewer := env.Client(t, auth.RoleViewer)
	for _, p := range []string{"/status", "/status.json", "/status.csv", "/status/s.static/badge.svg"} {
		resp := testkit.GetNoBody(t, viewer, env.URL+p)
		if resp.StatusCode != 200 {
			t.Fatalf("viewer %s: %s", p, resp.Status)
		}
	}

	open := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS, Auth: &handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1, AnonymousViewer: true}})
	anon = open.Anon()
	for _, p := range []string{"/status", "/status.json", "/status.csv", "/status/s.static/badge.svg"} {
		resp := testkit.GetNoBody(t, anon, open.URL+p)
		if resp.StatusCode != 200 {
			t.Fatalf("anonymous viewer %s: %s", p, resp.Status)
		}
	}
	// Anonymous viewers still cannot taint.
	mat(t, open, "s.static", "a", "v2", T0)
	resp, err := anon.Post(open.URL+"/api/v1/assets/s.static/partitions/a/taint", "application/json", strings.NewReader(`{"reason":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous taint: %s", resp.Status)
	}
	var n int
	open.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM partition_taints`)
	if n != 0 {
		t.Fatal("an anonymous taint was written")
	}
}

func decodeBytes(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// A "by HH:MM" policy is over policy once the window after the latest fresh
// one has passed its deadline without being built.
func TestStatusBoardDeadlinePolicyCountsMissingWindows(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("s.monthly", "{monthly: {start: 2024-10-01, end: 2025-01-01}}", "code_version: v1", `freshness: {by: "09:00"}`, "executor: {demo: {duration: 1s}}"),
	)
	now := T0.Add(10 * time.Hour) // 2025-02-01 10:00
	env.Handler.Now = func() time.Time { return now }
	over := func() bool {
		t.Helper()
		_, doc := get(t, env, "/status")
		return strings.Contains(doc.Find(`[data-testid="status-row"][data-asset="s.monthly"] [data-testid="lag"]`).Text(), "over policy")
	}
	mat(t, env, "s.monthly", "2024-10-01", "v1", time.Date(2024, 11, 1, 5, 0, 0, 0, time.UTC))
	mat(t, env, "s.monthly", "2024-11-01", "v1", time.Date(2024, 12, 1, 5, 0, 0, 0, time.UTC))
	// December (window ended 2025-01-01, due 09:00 that day) was never built.
	if !over() {
		t.Fatal("December is a month overdue, but the board says within policy")
	}
	mat(t, env, "s.monthly", "2024-12-01", "v1", time.Date(2025, 1, 1, 5, 0, 0, 0, time.UTC))
	if over() {
		t.Fatal("every month built by its deadline, but the board says over policy")
	}
}

// An anonymous viewer opening a page that needs an account (its tokens, its
// password) is sent to sign in and back, like /admin/users does; before, it
// got a "Sign in required" page with no way to sign in. The API still
// answers 401 with its JSON error.
func TestAnonymousViewerAccountPagesGoToSignIn(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS, Auth: &handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1, AnonymousViewer: true}})
	anon := env.Anon()
	for _, p := range []string{"/settings/tokens", "/settings/password", "/admin/users"} {
		resp, err := anon.Get(env.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape(p) {
			t.Errorf("anonymous %s: %s to %q, want 303 to /login?next=%s", p, resp.Status, loc, url.QueryEscape(p))
		}
	}
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/tokens", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("anonymous GET /api/v1/tokens: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

// TestStatusBoardRefresh: the board reloads itself every 30 s by default
// (htmx polling its own address into #status-board) and says when it was
// updated; ?refresh=N sets the period, 0 turns it off, and a period out of
// bounds or not a number is a 400 naming refresh and how to write it.
func TestStatusBoardRefresh(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(10*time.Hour))
	code, doc := get(t, env, "/status")
	board := doc.Find(`[data-testid="status-board"]`)
	if code != 200 || board.AttrOr("hx-trigger", "") != "every 30s" || board.AttrOr("hx-get", "") != "/status" || board.AttrOr("hx-select", "") != "#status-board" {
		t.Fatalf("default: %d, board %v", code, board.Nodes)
	}
	if got := doc.Find(`[data-testid="updated-at"]`).Text(); got != "2025-02-01 10:00:00 UTC" {
		t.Errorf("updated at %q", got)
	}
	if !strings.Contains(doc.Find(".updated").Text(), "refreshes every 30 s") {
		t.Errorf("the board does not say how often it refreshes: %q", doc.Find(".updated").Text())
	}
	_, doc = get(t, env, "/status?refresh=120")
	if b := doc.Find(`[data-testid="status-board"]`); b.AttrOr("hx-trigger", "") != "every 120s" || b.AttrOr("hx-get", "") != "/status?refresh=120" ||
		!strings.Contains(doc.Find(".updated").Text(), "every 2 min") {
		t.Errorf("refresh=120: %v %q", b.Nodes, doc.Find(".updated").Text())
	}
	_, doc = get(t, env, "/status?refresh=0")
	if b := doc.Find(`[data-testid="status-board"]`); b.Length() != 1 || b.AttrOr("hx-trigger", "none") != "none" || strings.Contains(doc.Find(".updated").Text(), "refreshes") {
		t.Errorf("refresh=0 still refreshes: %v", b.Nodes)
	}
	for _, q := range []string{"abc", "4", "3601", "-5", "1.5"} {
		r, body := env.GetBody(t, "/status?refresh="+url.QueryEscape(q))
		if r.StatusCode != 400 || !strings.Contains(string(body), "refresh must be a number of seconds from 5 to 3600") {
			t.Errorf("refresh=%s: %d %.300s", q, r.StatusCode, body)
		}
	}
}

// TestStatusBoardEndedSchemeIsNotOverPolicy: a daily asset whose scheme
// ended (2025-01-29 until 2025-02-01) with every partition materialized is
// within its max_lag policy long after the end (it read "over policy"
// forever: nothing newer can ever be built); its lag is none, said to be
// the scheme's end. A failed last partition still reads failing and over
// policy, lagging from the latest fresh one.
func TestStatusBoardEndedSchemeIsNotOverPolicy(t *testing.T) {
	t.Parallel()
	ws := testkit.Assets(
		testkit.Asset("e.done", "{daily: {start: 2025-01-29, end: 2025-02-01}}", "code_version: v1", "freshness: {max_lag: 26h}", "executor: {demo: {duration: 1s}}"),
		testkit.Asset("e.broken", "{daily: {start: 2025-01-29, end: 2025-02-01}}", "code_version: v1", "freshness: {max_lag: 26h}", "executor: {demo: {duration: 1s}}"),
	)
	env := testkit.New(t, testkit.Options{WorkspaceYAML: ws})
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	env.Handler.Now = func() time.Time { return now }
	for _, d := range []string{"29", "30", "31"} {
		built := T0.Add(2 * time.Hour) // 2025-02-01 02:00: every window had ended
		mat(t, env, "e.done", "2025-01-"+d, "v1", built)
		if d != "31" {
			mat(t, env, "e.broken", "2025-01-"+d, "v1", built)
		}
	}
	record(t, env, "e.broken", "2025-01-31", db.StatusFailed, "v1", T0)

	_, doc := get(t, env, "/status")
	done := doc.Find(`[data-testid="status-row"][data-asset="e.done"]`)
	lag := done.Find(`[data-testid="lag"]`)
	if done.Find(`[data-testid="latest-fresh"]`).Text() != "2025-01-31" || strings.Contains(lag.Text(), "over policy") || lag.HasClass("over") ||
		lag.Find(`[data-testid="scheme-ended"]`).Length() != 1 || !strings.HasPrefix(strings.TrimSpace(lag.Text()), "none") {
		t.Errorf("e.done: latest %q, lag %q, want 2025-01-31, none (the scheme ended), within policy", done.Find(`[data-testid="latest-fresh"]`).Text(), text(lag))
	}
	broken := doc.Find(`[data-testid="status-row"][data-asset="e.broken"] [data-testid="lag"]`)
	if !strings.Contains(broken.Text(), "over policy") || broken.Find(`[data-testid="scheme-ended"]`).Length() != 0 {
		t.Errorf("e.broken (2025-01-31 failed): lag %q, want over policy", text(broken))
	}

	_, by := statusJSON(t, env)
	if d := by["e.done"]; d.OverPolicy || d.LagSeconds == nil || *d.LagSeconds != 0 || d.Badge != "fresh" {
		t.Errorf("status.json e.done: over_policy %v, lag %v, badge %q; want false, 0, fresh", d.OverPolicy, d.LagSeconds, d.Badge)
	}
	if b := by["e.broken"]; !b.OverPolicy || b.Badge != "failing" || b.LagSeconds == nil || *b.LagSeconds != int64(now.Sub(time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC))/time.Second) {
		t.Errorf("status.json e.broken: over_policy %v, badge %q, lag %v; want true, failing, since 2025-01-31", b.OverPolicy, b.Badge, b.LagSeconds)
	}
}

// statusJSON reads /status.json: its assets, and the same by key.
func statusJSON(t *testing.T, env *testkit.Env) ([]handlers.AssetStatus, map[string]handlers.AssetStatus) {
	t.Helper()
	resp, _ := env.Get("/status.json")
	var out struct {
		Assets []handlers.AssetStatus
	}
	decode(t, resp, &out)
	resp.Body.Close()
	by := map[string]handlers.AssetStatus{}
	for _, a := range out.Assets {
		by[a.Key] = a
	}
	return out.Assets, by
}
