package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

const pgWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  t.daily:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 5ms}}
  t.flaky:
    partitions: {daily: {start: "2025-01-01"}}
    code_version: v1
    executor: {demo: {duration: 5ms, failure_rate: 1}}
  t.cmd:
    partitions: {static: [x]}
    code_version: v1
    executor:
      command: ['echo "tail me $TESSERA_PARTITIONS"; sleep 3']
      shell: true
`

// bfEnv starts a server with an engine; run starts its controller (without
// it, backfills stay PENDING, which makes states deterministic).
func pgEnv(t *testing.T, run bool) (*testkit.Env, *jobs.Engine) {
	t.Helper()
	return pgEnvWith(t, pgWorkspace, run)
}

// pgEnvWith is pgEnv with another workspace.
func pgEnvWith(t *testing.T, workspace string, run bool) (*testkit.Env, *jobs.Engine) {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: workspace})
	h := env.Handler
	if h.Engine != nil { // testkit may start one already
		return env, h.Engine
	}
	wsf := func() (*catalog.Workspace, map[string]int64) { w := h.Workspace(); return w.Workspace, w.IDs }
	eng, err := jobs.NewEngine(context.Background(), env.Store, wsf, slog.New(slog.NewTextHandler(io.Discard, nil)), jobs.Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.Engine = eng
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = eng.Run(ctx, time.Second) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return env, eng
}

func pgCreateBF(t *testing.T, eng *jobs.Engine, asset, start, end string, chunk int64) db.Backfill {
	t.Helper()
	cr, err := eng.Create(context.Background(), jobs.Request{Assets: []string{asset}, ChunkSize: chunk, MaxConcurrentRuns: 2,
		Selector: jobs.Selector{Type: "range", Start: start, End: end}, Title: "test " + asset}, "", "tester")
	if err != nil {
		t.Fatal(err)
	}
	return cr.Backfill
}

func pgGet(t *testing.T, env *testkit.Env, c *http.Client, path string) (int, *goquery.Document) {
	t.Helper()
	resp, err := c.Get(env.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, doc
}

func pgDoc(t *testing.T, resp *http.Response) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestBackfillButtonsPerStateAndRole(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	clients := map[string]*http.Client{
		"viewer": env.Client(t, auth.RoleViewer), "operator": env.Client(t, auth.RoleOperator), "admin": env.Client(t, auth.RoleAdmin)}
	cases := []struct {
		state     string
		failed    int64
		want      []string
		badge     string
		withKids  bool
		terminate bool
	}{
		{db.BackfillPending, 0, []string{"pause", "cancel"}, "Pending", false, false},
		{db.BackfillRunning, 0, []string{"pause", "cancel"}, "Running", false, false},
		{db.BackfillPaused, 0, []string{"resume", "cancel"}, "Paused", false, false},
		{db.BackfillPaused, 3, []string{"resume", "cancel", "retry-failed"}, "Paused, with failures", false, false},
		{db.BackfillCanceling, 0, []string{"terminate"}, "Canceling", false, false},
		{db.BackfillCanceling, 0, nil, "Canceling", false, true},
		{db.BackfillCanceled, 0, nil, "Canceled", false, false},
		{db.BackfillSucceeded, 0, nil, "Succeeded", false, false},
		{db.BackfillFailed, 3, []string{"retry-failed"}, "Failed", false, false},
	}
	all := []string{"pause", "resume", "cancel", "retry-failed", "terminate"}
	for _, tc := range cases {
		if _, err := env.Store.W.Exec(`UPDATE backfills SET state=?, partitions_failed=?, runs_failed=?, terminate=? WHERE id=?`, tc.state, tc.failed, min(tc.failed, 1), tc.terminate, b.ID); err != nil {
			t.Fatal(err)
		}
		for role, c := range clients {
			status, doc := pgGet(t, env, c, "/backfills/"+b.ID)
			if status != http.StatusOK {
				t.Fatalf("%s as %s: status %d", tc.state, role, status)
			}
			if got := strings.TrimSpace(doc.Find(`[data-testid="state-badge"]`).First().Text()); !strings.Contains(got, tc.badge) {
				t.Errorf("%s (failed %d): badge %q, want %q", tc.state, tc.failed, got, tc.badge)
			}
			want := map[string]bool{}
			if role != "viewer" {
				for _, a := range tc.want {
					want[a] = true
				}
			}
			for _, a := range all {
				has := doc.Find(`[data-testid="action-`+a+`"]`).Length() > 0
				if has != want[a] {
					t.Errorf("state %s failed %d as %s: button %s present=%v, want %v", tc.state, tc.failed, role, a, has, want[a])
				}
			}
			// Every button's form carries the CSRF token and the version.
			doc.Find(`[data-testid="actions"] form`).Each(func(_ int, f *goquery.Selection) {
				if f.Find(`input[name="_csrf"]`).AttrOr("value", "") == "" || f.Find(`input[name="expected_state_version"]`).AttrOr("value", "") == "" {
					t.Errorf("state %s as %s: a button form lacks _csrf or expected_state_version", tc.state, role)
				}
			})
		}
	}
}

func TestBackfillPageParts(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-31", 3)
	c := env.Client(t, auth.RoleViewer)
	status, doc := pgGet(t, env, c, "/backfills/"+b.ID)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	for _, id := range []string{"backfill-summary", "progress-bar", "progress-pct", "throughput", "eta", "outcome-grid", "chunk-section", "timeline", "refresh", "backfill-live"} {
		if doc.Find(`[data-testid="`+id+`"]`).Length() == 0 {
			t.Errorf("backfill page has no %s", id)
		}
	}
	if n := doc.Find(`[data-testid="outcome-tile"][data-state="pending"]`).Length(); n != 31 {
		t.Errorf("%d pending outcome tiles, want 31 (one per partition, none planned)", n)
	}
	if doc.Find(`[data-testid="event"][data-type="backfill.created"]`).Length() != 1 {
		t.Error("timeline lacks the creation event")
	}
	if got := doc.Find(`[data-testid="backfill-live"]`).AttrOr("sse-connect", ""); got != "/backfills/"+b.ID+"/stream" {
		t.Errorf("sse-connect %q", got)
	}
	for _, p := range []struct{ path, testid string }{
		{"/summary", "backfill-summary"}, {"/chunks", "chunk-section"}, {"/grid", "outcome-grid"}, {"/events", "timeline"},
	} {
		status, doc := pgGet(t, env, c, "/backfills/"+b.ID+p.path)
		if status != http.StatusOK || doc.Find(`[data-testid="`+p.testid+`"]`).Length() == 0 {
			t.Errorf("partial %s: status %d, no %s", p.path, status, p.testid)
		}
		if doc.Find("header.top").Length() != 0 {
			t.Errorf("partial %s renders the page frame", p.path)
		}
	}
	resp, err := c.Get(env.URL + "/backfills/" + b.ID + "/actions?v=" + fmt.Sprint(b.StateVersion))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("actions partial at the current version: status %d, want 204", resp.StatusCode)
	}
	if status, doc := pgGet(t, env, c, "/backfills/"+b.ID+"/actions?v=0"); status != http.StatusOK || doc.Find(`[data-testid="actions-live"]`).Length() != 1 {
		t.Errorf("actions partial at an old version: status %d", status)
	}
	if status, _ := pgGet(t, env, c, "/backfills/"+b.ID+"/chunks?chunk_state=bogus"); status != http.StatusBadRequest {
		t.Errorf("bogus chunk_state: status %d", status)
	}
	if status, _ := pgGet(t, env, c, "/backfills/bf_missing"); status != http.StatusNotFound {
		t.Errorf("unknown backfill: status %d", status)
	}
	if status, _ := pgGet(t, env, c, "/runs/run_missing"); status != http.StatusNotFound {
		t.Errorf("unknown run: status %d", status)
	}
}

func TestBackfillsListFilterAndPages(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	var ids []string
	for i := range handlers.BackfillPageSize + 5 {
		d := fmt.Sprintf("2025-02-%02d", i%28+1)
		ids = append(ids, pgCreateBF(t, eng, "t.daily", d, d, 1).ID)
	}
	if _, err := eng.Transition(context.Background(), ids[0], jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/backfills")
	rows := doc.Find(`[data-testid="backfill-row"]`)
	if rows.Length() != handlers.BackfillPageSize {
		t.Fatalf("%d rows on the first page", rows.Length())
	}
	if rows.First().AttrOr("data-id", "") != ids[len(ids)-1] {
		t.Error("the list is not newest first")
	}
	if rows.First().Find(`[data-testid="progress-bar"]`).Length() != 1 {
		t.Error("a row has no progress bar")
	}
	if doc.Find(`[data-testid="new-backfill"]`).Length() != 0 {
		t.Error("a viewer is offered New backfill")
	}
	next, ok := doc.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatal("no next page link")
	}
	_, doc = pgGet(t, env, c, next)
	if n := doc.Find(`[data-testid="backfill-row"]`).Length(); n != 5 {
		t.Errorf("%d rows on the second page, want 5", n)
	}
	if doc.Find(`[data-testid="next-page"]`).Length() != 0 {
		t.Error("the last page links further")
	}
	_, doc = pgGet(t, env, c, "/backfills?state=PAUSED")
	if r := doc.Find(`[data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != ids[0] {
		t.Errorf("state filter: %d rows", r.Length())
	}
	if status, _ := pgGet(t, env, c, "/backfills?state=NOPE"); status != http.StatusBadRequest {
		t.Errorf("unknown state filter: %d", status)
	}
	// Asset filter: only the backfills selecting the asset; pages keep it; the
	// asset page links to it; the API filters the same way.
	flaky := pgCreateBF(t, eng, "t.flaky", "2025-01-01", "2025-01-01", 1)
	_, doc = pgGet(t, env, c, "/backfills?asset=t.flaky")
	if r := doc.Find(`[data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != flaky.ID {
		t.Errorf("asset filter t.flaky: %d rows", r.Length())
	}
	if doc.Find(`[data-testid="asset-filter"] option[selected]`).AttrOr("value", "") != "t.flaky" {
		t.Error("the asset filter does not show the chosen asset")
	}
	_, doc = pgGet(t, env, c, "/backfills?asset=t.daily")
	next, _ = doc.Find(`[data-testid="next-page"]`).Attr("href")
	if doc.Find(`[data-testid="backfill-row"]`).Length() != handlers.BackfillPageSize || !strings.Contains(next, "asset=t.daily") {
		t.Errorf("asset filter t.daily: %d rows, next %q", doc.Find(`[data-testid="backfill-row"]`).Length(), next)
	}
	if _, doc = pgGet(t, env, c, next); doc.Find(`[data-testid="backfill-row"]`).Length() != 5 {
		t.Errorf("asset filter, second page: %d rows", doc.Find(`[data-testid="backfill-row"]`).Length())
	}
	if status, _ := pgGet(t, env, c, "/backfills?asset=nope"); status != http.StatusBadRequest {
		t.Errorf("unknown asset filter: %d", status)
	}
	if _, doc = pgGet(t, env, c, "/assets/t.flaky"); doc.Find(`[data-testid="asset-backfills"]`).AttrOr("href", "") != "/backfills?asset=t.flaky" {
		t.Error("the asset page does not link to its backfills")
	}
	// The asset page lists the asset's unfinished backfills (at most 10).
	if r := doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`); r.Length() != 1 || r.AttrOr("data-id", "") != flaky.ID {
		t.Errorf("t.flaky's page lists %d active backfills", r.Length())
	}
	// Beside them, the page says its grid does not follow them and offers a
	// refresh (the UI audit took the grid for live: it was as of the load).
	if n := doc.Find(`[data-testid="grid-snapshot"] a[data-testid="grid-refresh"][href=""]`).Length(); n != 1 ||
		!strings.Contains(doc.Find(`[data-testid="grid-snapshot"]`).Text(), "as of when the page was loaded") {
		t.Errorf("t.flaky's page does not say its grid is as of its load")
	}
	if _, doc = pgGet(t, env, c, "/assets/t.daily"); doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).Length() != 10 {
		t.Errorf("t.daily's page lists %d active backfills, want 10", doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).Length())
	}
	if _, doc = pgGet(t, env, c, "/assets/t.cmd"); doc.Find(`[data-testid="asset-active-backfills"]`).Length() != 0 {
		t.Error("an asset without backfills shows an active backfills section")
	}
	// The live fragments: the asset page's section alone, and the list's
	// table alone with the page's filters and position.
	if status, doc := pgGet(t, env, c, "/assets/t.flaky/active-backfills"); status != http.StatusOK || doc.Find(`nav`).Length() != 0 ||
		doc.Find(`[data-testid="asset-active-backfills"] [data-testid="backfill-row"]`).AttrOr("data-id", "") != flaky.ID {
		t.Errorf("asset active fragment: %d", status)
	}
	if status, doc := pgGet(t, env, c, "/assets/t.cmd/active-backfills"); status != http.StatusOK || doc.Find(`[data-testid="asset-active-backfills"]`).Length() != 0 {
		t.Errorf("asset active fragment without backfills: %d", status)
	}
	if status, _ := pgGet(t, env, c, "/assets/nope/active-backfills"); status != http.StatusNotFound {
		t.Errorf("asset active fragment of an unknown asset: %d", status)
	}
	_, doc = pgGet(t, env, c, next)
	live := doc.Find(`[data-testid="backfills-live"] [hx-get]`).AttrOr("hx-get", "")
	if !strings.Contains(live, "asset=t.daily") || !strings.Contains(live, "before=") || !strings.Contains(live, "fragment=rows") {
		t.Fatalf("the list's live table fetches %q", live)
	}
	if status, frag := pgGet(t, env, c, live); status != http.StatusOK || frag.Find(`[data-testid="nav-main"]`).Length() != 0 || frag.Find(`[data-testid="backfill-row"]`).Length() != 5 {
		t.Errorf("list fragment %s: %d, %d rows", live, status, frag.Find(`[data-testid="backfill-row"]`).Length())
	}
	tok := env.Token(t, auth.RoleViewer)
	for _, tc := range []struct {
		query string
		code  int
		n     int
	}{{"asset=t.flaky", 200, 1}, {"asset=t.daily&limit=500", 200, handlers.BackfillPageSize + 5}, {"asset=t.flaky&state=SUCCEEDED,FAILED,PENDING,RUNNING", 200, 1}, {"asset=nope", 400, 0}} {
		req, _ := http.NewRequest("GET", env.URL+"/api/v1/backfills?"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Backfills []map[string]any
			Error     struct{ Field string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || len(body.Backfills) != tc.n || (tc.code == 400 && body.Error.Field != "asset") {
			t.Errorf("GET /api/v1/backfills?%s: %d, %d backfills, error %+v", tc.query, resp.StatusCode, len(body.Backfills), body.Error)
		}
	}
	_, doc = pgGet(t, env, env.Client(t, auth.RoleOperator), "/backfills")
	if doc.Find(`[data-testid="new-backfill"]`).Length() != 1 {
		t.Error("an operator is not offered New backfill")
	}
}

func TestNewBackfillPrefillAndPreview(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	status, doc := pgGet(t, env, c, "/backfills/new?asset=t.daily&start=2025-01-01&end=2025-01-20")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
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
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/backfills/preview", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pdoc := pgDoc(t, resp)
	if resp.StatusCode != http.StatusOK || pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", "") != "5" || pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", "") != "3" {
		t.Errorf("htmx preview: status %d, partitions %q chunks %q", resp.StatusCode, pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""), pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", ""))
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
	var n int
	if err := env.Store.R.Get(&n, `SELECT COUNT(*) FROM backfills`); err != nil {
		t.Fatal(err)
	}
	return n
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
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CSRF %q: status %d", tok, resp.StatusCode)
		}
		if !strings.Contains(strings.ToLower(string(body)), "csrf") && !strings.Contains(strings.ToLower(string(body)), "token") {
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

func TestTransitionConflictAndRefusal(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	c := env.Client(t, auth.RoleOperator)
	// Another tab pauses and resumes: the version moves on.
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActPause, 0, false, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActResume, 0, false, "other"); err != nil {
		t.Fatal(err)
	}
	resp := env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {fmt.Sprint(b.StateVersion)}})
	doc := pgDoc(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("stale pause: status %d", resp.StatusCode)
	}
	if msg := doc.Find(`[data-testid="message"]`).Text(); !strings.Contains(msg, "Someone changed this backfill") {
		t.Errorf("stale pause message %q", msg)
	}
	now, _ := env.Store.Backfill(context.Background(), b.ID)
	if now.State != db.BackfillRunning {
		t.Errorf("stale pause changed the state to %s", now.State)
	}
	// The reloaded page carries the new version: pausing now works.
	v := doc.Find(`[data-testid="backfill-summary"]`).AttrOr("data-version", "")
	if v != fmt.Sprint(now.StateVersion) {
		t.Errorf("reloaded page has version %s, want %d", v, now.StateVersion)
	}
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {v}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause: status %d", resp.StatusCode)
	}
	// Resume is allowed from PAUSED only; pausing twice is refused clearly.
	now, _ = env.Store.Backfill(context.Background(), b.ID)
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {fmt.Sprint(now.StateVersion)}})
	doc = pgDoc(t, resp)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(doc.Find(`[data-testid="message"]`).Text(), "cannot pause") {
		t.Errorf("pause of a paused backfill: status %d, message %q", resp.StatusCode, doc.Find(`[data-testid="message"]`).Text())
	}
	after, _ := env.Store.Backfill(context.Background(), b.ID)
	if after.StateVersion != now.StateVersion {
		t.Error("a refused transition changed the version")
	}
	// Viewer: refused; cancel with terminate from an operator: canceled.
	if resp := env.SessionPost(t, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID+"/cancel", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer cancel: status %d", resp.StatusCode)
	}
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/cancel", url.Values{"expected_state_version": {fmt.Sprint(after.StateVersion)}, "terminate": {"1"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: status %d", resp.StatusCode)
	}
	final, _ := env.Store.Backfill(context.Background(), b.ID)
	if final.State != db.BackfillCanceled {
		t.Errorf("after cancel: %s", final.State)
	}
	if resp := env.SessionPost(t, c, "/backfills/"+b.ID+"/explode", url.Values{}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown action: status %d", resp.StatusCode)
	}
}

func TestRunPageAndRetryFailed(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	ok := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-04", 2)
	bad := pgCreateBF(t, eng, "t.flaky", "2025-01-01", "2025-01-03", 1)
	pgWaitState(t, env, ok.ID, db.BackfillSucceeded)
	pgWaitState(t, env, bad.ID, db.BackfillFailed)
	c := env.Client(t, auth.RoleOperator)
	_, doc := pgGet(t, env, c, "/backfills/"+ok.ID)
	if got := doc.Find(`[data-testid="progress-pct"]`).Text(); got != "100%" {
		t.Errorf("finished backfill shows %q", got)
	}
	// The list counts done as the page does: built or failed, all of them.
	_, list := pgGet(t, env, c, "/backfills")
	for id, want := range map[string]string{ok.ID: "100% done of 4", bad.ID: "100% done of 3"} {
		got := strings.Join(strings.Fields(list.Find(`[data-testid="backfill-row"][data-id="`+id+`"] [data-testid="progress-pct"]`).Text()), " ")
		if got != want {
			t.Errorf("list progress of %s: %q, want %q", id, got, want)
		}
	}
	if doc.Find(`[data-testid="throughput-chart"]`).Length() != 1 {
		t.Error("no throughput chart after the backfill ran")
	}
	if doc.Find(`[data-testid="backfill-live"]`).AttrOr("sse-connect", "") != "" {
		t.Error("a finished backfill still subscribes to updates")
	}
	if doc.Find(`[data-testid="refresh"]`).Length() != 0 {
		t.Error("a finished backfill's page still says it updates by itself")
	}
	runHref, exists := doc.Find(`[data-testid="run-link"]`).First().Attr("href")
	if !exists {
		t.Fatal("no run link in the chunk table")
	}
	_, rdoc := pgGet(t, env, c, runHref)
	if rdoc.Find(`[data-testid="attempt"]`).Length() < 1 || rdoc.Find(`[data-testid="run-log"]`).Length() != 1 {
		t.Error("run page lacks attempts or the log")
	}
	if s := rdoc.Find(`[data-testid="run-live"]`).AttrOr("data-state", ""); s != db.RunSucceeded {
		t.Errorf("run state %q", s)
	}
	if got := rdoc.Find(`[data-testid="run-log"]`).Text(); got != "(no output)" {
		t.Errorf("an attempt that wrote nothing shows the log %q", got)
	}
	// The run's partitions (chunks of 2), each materialized, linked to its page.
	rows := rdoc.Find(`[data-testid="run-partition"]`)
	if rows.Length() != 2 || rows.Filter(`[data-state="materialized"]`).Length() != 2 || !strings.HasPrefix(rows.First().Find("a").AttrOr("href", ""), "/assets/t.daily/partitions/") {
		t.Errorf("run page partitions: %d rows, %d materialized", rows.Length(), rows.Filter(`[data-state="materialized"]`).Length())
	}
	// Round trip: the partition's history links back to the run that built it.
	_, pdoc := pgGet(t, env, c, rows.First().Find("a").AttrOr("href", ""))
	if back := pdoc.Find(`[data-testid="instance-run"]`).First().AttrOr("href", ""); back != runHref {
		t.Errorf("the partition's instance links to run %q, want %q", back, runHref)
	}
	// A failed run shows the partition's error; the API lists the same.
	_, fdoc := pgGet(t, env, c, "/backfills/"+bad.ID)
	failHref := fdoc.Find(`[data-testid="run-link"]`).First().AttrOr("href", "")
	_, frdoc := pgGet(t, env, c, failHref)
	if got := strings.TrimSpace(frdoc.Find(`[data-testid="run-outcome-counts"]`).Text()); got != "0 materialized · 1 failed · 0 upstream failed" {
		t.Errorf("failed run outcome counts: %q", got)
	}
	if f := frdoc.Find(`[data-testid="run-partition"][data-state="failed"]`); f.Length() != 1 || !strings.Contains(f.Text(), "demo: simulated failure") {
		t.Errorf("failed run page partitions: %q", frdoc.Find(`[data-testid="run-partition-table"]`).Text())
	}
	var rj struct {
		PartitionList []jobs.PartitionOutcome `json:"partition_list"`
	}
	tok := env.Token(t, auth.RoleViewer)
	req, _ := http.NewRequest("GET", env.URL+"/api/v1"+failHref, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := http.DefaultClient.Do(req); err != nil || json.NewDecoder(resp.Body).Decode(&rj) != nil || len(rj.PartitionList) != 1 ||
		rj.PartitionList[0].Status != db.StatusFailed || rj.PartitionList[0].Attempt != 1 || rj.PartitionList[0].Error != "demo: simulated failure" {
		t.Errorf("API run partition list: %+v %v", rj.PartitionList, err)
	}
	if status, ldoc := pgGet(t, env, c, runHref+"/live"); status != http.StatusOK || ldoc.Find(`[data-testid="run-live"]`).Length() != 1 || ldoc.Find("header.top").Length() != 0 {
		t.Errorf("run live partial: status %d", status)
	}
	resp0, err := c.Get(env.URL + runHref + "/stream?once=1")
	if err != nil {
		t.Fatal(err)
	}
	resp0.Body.Close()
	if resp0.StatusCode != http.StatusOK || resp0.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("run stream: %d %s", resp0.StatusCode, resp0.Header.Get("Content-Type"))
	}
	// Retry failed: the child holds exactly the failed partitions.
	_, doc = pgGet(t, env, c, "/backfills/"+bad.ID)
	form := doc.Find(`[data-testid="action-retry-failed"]`).Closest("form")
	if form.Length() != 1 {
		t.Fatal("no Retry failed button on a failed backfill")
	}
	vals := url.Values{}
	form.Find("input").Each(func(_ int, s *goquery.Selection) { vals.Set(s.AttrOr("name", ""), s.AttrOr("value", "")) })
	resp := env.SessionPost(t, c, "/backfills/"+bad.ID+"/retry-failed", vals)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/backfills/bf_") {
		t.Fatalf("retry: status %d location %q", resp.StatusCode, loc)
	}
	again := env.SessionPost(t, c, "/backfills/"+bad.ID+"/retry-failed", vals)
	if again.Header.Get("Location") != loc {
		t.Errorf("a repeated retry request went to %q, not %q", again.Header.Get("Location"), loc)
	}
	child, err := env.Store.Backfill(context.Background(), strings.TrimPrefix(loc, "/backfills/"))
	if err != nil {
		t.Fatal(err)
	}
	if child.TotalPartitions != 3 || child.ParentBackfillID == nil || *child.ParentBackfillID != bad.ID {
		t.Errorf("child: %d partitions, parent %v", child.TotalPartitions, child.ParentBackfillID)
	}
	_, doc = pgGet(t, env, c, "/backfills/"+bad.ID)
	if doc.Find(`[data-testid="child-link"]`).Length() != 1 || doc.Find(`[data-testid="action-retry-failed"]`).Length() != 0 {
		t.Error("the parent does not link to its retry, or still offers Retry failed")
	}
}

func pgWaitState(t *testing.T, env *testkit.Env, id, state string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "backfill "+id+" to be "+state, func() bool {
		b, err := env.Store.Backfill(context.Background(), id)
		return err == nil && b.State == state
	})
}

// TestStreamSubscribersReturnToZero opens many live streams, closes them and
// checks the broker forgets every one; beyond the bound, streams are refused.
func TestStreamSubscribersReturnToZero(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	br := eng.Broker()
	br.SetMax(40)
	env.Handler.MaxStreamsPerUser = 100 // one token opens them all
	token := env.AdminToken()
	ctx, cancel := context.WithCancel(context.Background())
	var bodies []io.ReadCloser
	paths := []string{"/backfills/" + b.ID + "/stream", "/backfills/stream"}
	for i := range 40 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+paths[i%2], nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream %d: %d %s", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		bodies = append(bodies, resp.Body)
	}
	if n := br.Count(); n != 40 {
		t.Fatalf("%d subscribers, want 40", n)
	}
	// Full: the next stream is refused, not queued.
	resp, err := env.Get("/backfills/" + b.ID + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream beyond the bound: status %d", resp.StatusCode)
	}
	// A change reaches a subscriber as an update event.
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	got := ""
	for !strings.Contains(got, "event: update\ndata: changed") {
		n, err := bodies[0].Read(buf)
		if err != nil {
			t.Fatalf("read stream: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	cancel()
	for _, b := range bodies {
		b.Close()
	}
	testkit.Eventually(t, 5*time.Second, "no subscriber left after every stream closed", func() bool { return br.Count() == 0 })
}

func TestOverviewAndAssetSelection(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	c := env.Client(t, auth.RoleViewer)
	// No active backfill: no section, but the live container waits for one.
	_, doc := pgGet(t, env, c, "/")
	if doc.Find(`[data-testid="active-backfills"]`).Length() != 0 || doc.Find(`[data-testid="active-backfills-live"] [hx-get="/backfills/active"]`).Length() != 1 {
		t.Fatal("the overview without an active backfill: a section, or no live container")
	}
	if status, doc := pgGet(t, env, c, "/backfills/active"); status != http.StatusOK || doc.Find(`[data-testid="active-backfills"]`).Length() != 0 {
		t.Errorf("active partial with none active: %d", status)
	}
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	_, doc = pgGet(t, env, c, "/")
	row := doc.Find(`[data-testid="active-backfills"] [data-testid="backfill-row"][data-id="` + b.ID + `"]`)
	if row.Length() != 1 || row.Find(`[data-testid="progress-bar"]`).Length() != 1 {
		t.Fatal("the overview does not show the active backfill with a progress bar")
	}
	status, doc := pgGet(t, env, c, "/backfills/active")
	if status != http.StatusOK || doc.Find(`[data-testid="active-backfills"] [data-testid="backfill-row"]`).Length() != 1 {
		t.Errorf("active partial: %d", status)
	}
	_, doc = pgGet(t, env, env.Client(t, auth.RoleOperator), "/assets/t.daily") // viewers cannot launch: no bar
	bar := doc.Find(`form[data-testid="selection-bar"]`)
	if bar.Length() != 1 || bar.AttrOr("action", "") != "/backfills/new" || bar.Find(`input[name="asset"]`).AttrOr("value", "") != "t.daily" {
		t.Fatal("the asset page has no selection bar opening the new-backfill page")
	}
	_, doc = pgGet(t, env, c, "/backfills/selection?asset=t.daily&start=2025-01-03&end=2025-01-09")
	if got := doc.Find(`[data-testid="selection-n"]`).AttrOr("data-n", ""); got != "7" {
		t.Errorf("selection count %q, want 7", got)
	}
	_, doc = pgGet(t, env, c, "/backfills/selection?asset=t.daily&start=2025-01-09&end=2025-01-03")
	if doc.Find(`[data-testid="selection-error"]`).Length() != 1 {
		t.Error("a reversed selection has no message")
	}
	if status, _ := pgGet(t, env, c, "/backfills/selection?asset=nope"); status != http.StatusNotFound {
		t.Errorf("unknown asset: %d", status)
	}
}

func TestRunPageTailsTheLiveLog(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	b := pgCreateBF(t, eng, "t.cmd", "", "", 1)
	c := env.Client(t, auth.RoleViewer)
	var doc *goquery.Document
	testkit.Eventually(t, 10*time.Second, "the run page to show the running attempt's output", func() bool {
		runs, err := env.Store.Runs(context.Background(), b.ID, nil, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].State != db.RunRunning {
			return false
		}
		_, doc = pgGet(t, env, c, "/runs/"+runs[0].ID+"/live")
		return strings.Contains(doc.Find(`[data-testid="run-log"]`).Text(), "tail me x")
	})
	if !strings.Contains(doc.Find(`[data-testid="run-live"]`).AttrOr("hx-trigger", ""), "every") {
		t.Error("a running run's page does not poll its log")
	}
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActCancel, 0, true, "tester"); err != nil {
		t.Fatal(err)
	}
}

// TestBackfillPageQueuedIsNotRunning: chunks waiting for a retry's backoff
// are counted as queued, not running; the counts add up to the selection.
func TestBackfillPageQueuedIsNotRunning(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, `
assets:
  q.flaky:
    partitions: {daily: {start: "2025-01-01"}}
    retries: {max_attempts: 3, backoff: 1h}
    executor: {demo: {duration: 1ms, failure_rate: 1}}
`, true)
	b := pgCreateBF(t, eng, "q.flaky", "2025-01-01", "2025-01-04", 2)
	c := env.Client(t, auth.RoleViewer)
	var count func(k string) string
	testkit.Eventually(t, 15*time.Second, "4 queued partitions", func() bool {
		_, doc := pgGet(t, env, c, "/backfills/"+b.ID)
		count = func(k string) string { return doc.Find(`[data-testid="count-` + k + `"] b`).Text() }
		return count("queued") == "4"
	})
	if count("running") != "0" || count("pending") != "0" || count("chunks") != "0 of 2 finished" {
		t.Fatalf("running %q pending %q chunks %q, want 0, 0 and 0 of 2 finished", count("running"), count("pending"), count("chunks"))
	}
}

// While nothing runs because its runs wait out a retry's backoff, the
// backfill page says so and when the first retry starts, instead of an ETA
// from the rate so far that only grows meanwhile.
func TestBackfillPageETAWaitingForRetry(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, `assets:
  r.flaky:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 2, backoff: 1h}
    executor: {demo: {duration: 1ms, failure_rate: 1}}
`, true)
	b := pgCreateBF(t, eng, "r.flaky", "2025-01-01", "2025-01-01", 1)
	c := env.Client(t, auth.RoleViewer)
	var eta string
	testkit.Eventually(t, 20*time.Second, "the page to say it waits for the retry", func() bool {
		_, doc := pgGet(t, env, c, "/backfills/"+b.ID)
		eta = strings.TrimSpace(doc.Find(`[data-testid="eta"]`).Text())
		return strings.Contains(eta, "waiting for 1 retry, the first at ")
	})
	if !strings.Contains(eta, "(in 59 min") && !strings.Contains(eta, "(in 1 h") {
		t.Errorf("ETA %q, want the retry about an hour from now", eta)
	}
	// Nothing will come over the stream until the retry: the summary
	// refreshes its countdown itself, and only then.
	_, doc := pgGet(t, env, c, "/backfills/"+b.ID)
	if trig := doc.Find(`[data-testid="backfill-summary"]`).AttrOr("hx-trigger", ""); trig != "sse:update, every 5s" {
		t.Errorf("summary hx-trigger %q while waiting for a retry, want sse:update, every 5s", trig)
	}
	// So does the chunk table, whose waiting row says "(in …)" too (it
	// stayed frozen while the ETA above it counted down).
	if trig := doc.Find(`[data-testid="chunk-section"]`).AttrOr("hx-trigger", ""); trig != "sse:update, every 5s" {
		t.Errorf("chunk table hx-trigger %q while a chunk waits for its retry, want sse:update, every 5s", trig)
	}
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	_, doc = pgGet(t, env, c, "/backfills/"+b.ID)
	if trig := doc.Find(`[data-testid="backfill-summary"]`).AttrOr("hx-trigger", ""); trig != "sse:update" {
		t.Errorf("summary hx-trigger %q of a paused backfill, want sse:update", trig)
	}
	if trig := doc.Find(`[data-testid="chunk-section"]`).AttrOr("hx-trigger", ""); trig != "sse:update" {
		t.Errorf("chunk table hx-trigger %q of a paused backfill, want sse:update", trig)
	}
}

// An error page leads back to the section it was asked in: an unknown
// backfill to the backfills, not to the assets.
func TestErrorPageLeadsBackToItsSection(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleViewer)
	for path, want := range map[string]string{
		"/backfills/bf_doesnotexist": "/backfills",
		"/runs/run_doesnotexist":     "/backfills",
		"/assets/no.such.asset":      "/",
	} {
		status, doc := pgGet(t, env, c, path)
		if got := doc.Find(`[data-testid="error-back"]`).AttrOr("href", ""); status != http.StatusNotFound || got != want {
			t.Errorf("%s: %d, back link %q, want 404 with %q", path, status, got, want)
		}
	}
}

// TestRetryFailedFromTwoTabsLaunchesOneChild: two pages of a failed backfill
// open before either retries carry the same retry request, so pressing
// "Retry failed" in the second lands on the child the first launched
// instead of building the failed partitions a second time. Before, every
// page render had a request id of its own: the second tab made a duplicate
// child.
func TestRetryFailedFromTwoTabsLaunchesOneChild(t *testing.T) {
	t.Parallel()
	env, tok, b := apiBackfillEnv(t, `
assets:
  f.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms, failure_rate: 1}}
`,
		`{"assets":["f.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"chunk_size":3,"max_concurrent_runs":1}`)
	id := b["id"].(string)
	apiWaitState(t, env, tok, id, "FAILED")
	op := env.Client(t, auth.RoleOperator)
	form := func() url.Values {
		_, doc := pgGet(t, env, op, "/backfills/"+id)
		f := url.Values{}
		doc.Find(`form:has([data-testid="action-retry-failed"]) input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
			f.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
		})
		if f.Get("retry_request_id") == "" {
			t.Fatalf("no Retry failed form on the page")
		}
		f.Del("_csrf") // SessionPost adds the session's
		return f
	}
	tabA, tabB := form(), form()
	press := func(f url.Values) string {
		r := env.SessionPost(t, op, "/backfills/"+id+"/retry-failed", f)
		if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/backfills/bf_") {
			t.Fatalf("retry failed: %d → %q", r.StatusCode, r.Header.Get("Location"))
		}
		return r.Header.Get("Location")
	}
	first := press(tabA)
	if second := press(tabB); second != first {
		t.Fatalf("the second tab launched %s beside %s", second, first)
	}
	children := func() (n int) {
		env.Store.R.Get(&n, `SELECT COUNT(*) FROM backfills WHERE parent_backfill_id=?`, id)
		return n
	}
	if n := children(); n != 1 {
		t.Fatalf("%d children after two presses of one retry, want 1", n)
	}
	// A reloaded page links the child instead of offering the button.
	if _, doc := pgGet(t, env, op, "/backfills/"+id); doc.Find(`[data-testid="action-retry-failed"]`).Length() != 0 ||
		!strings.Contains(doc.Text(), strings.TrimPrefix(first, "/backfills/")) {
		t.Fatalf("the parent's page after the retry still offers it, or does not link %s", first)
	}
}

// TestCanceledBackfillPageSaysCanceled: once a backfill is canceled, its
// progress bar names the partitions it will never build "Canceled" (it
// said "Pending", beside a counter reading "canceled"), and the chunk count
// says how many chunks were canceled instead of "3 of 10 finished" as if 7
// were still to come.
func TestCanceledBackfillPageSaysCanceled(t *testing.T) {
	t.Parallel()
	env, tok, b := apiBackfillEnv(t, `
assets:
  slow.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 30s}}
`,
		`{"assets":["slow.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-10"},"chunk_size":1,"max_concurrent_runs":3}`)
	id := b["id"].(string)
	apiWaitState(t, env, tok, id, "RUNNING")
	if code, e := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/cancel", `{"terminate":true}`); code != http.StatusOK {
		t.Fatalf("cancel %d %v", code, e)
	}
	final := apiWaitState(t, env, tok, id, "CANCELED")
	counts := final["counts"].(map[string]any)
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+id)
	bar := doc.Find(`[data-testid="progress-bar"]`).AttrOr("aria-label", "")
	if !strings.Contains(bar, "Canceled 10 (100%)") || strings.Contains(bar, "Pending") {
		t.Errorf("progress bar %q, want its 10 partitions canceled, none pending", bar)
	}
	chunks := doc.Find(`[data-testid="count-chunks"]`).Text()
	if want := fmt.Sprintf("0 of 10 finished, %v canceled", counts["canceled"]); !strings.Contains(chunks, want) || counts["canceled"] != float64(10) {
		t.Errorf("chunk count %q (API counts %v), want %q", chunks, counts, want)
	}
}

// TestStreamCoalescesAfterItsFirstEvent: a change right after a page's
// stream connected comes StreamMinInterval after the stream's first event,
// not on its heels, when the partials that first event made the page fetch
// would still be in flight (htmx then loses it: the UI audit saw a pause
// made right after the page loaded leave the badge on Running).
func TestStreamCoalescesAfterItsFirstEvent(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	resp := openStream(t, env, b.ID)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	next := func(want string) time.Time {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read stream: %v", err)
			}
			if strings.TrimSpace(line) == want {
				return time.Now()
			}
		}
	}
	first := next("data: connected")
	if _, err := eng.Transition(context.Background(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	if gap := next("data: changed").Sub(first); gap < handlers.StreamMinInterval-20*time.Millisecond {
		t.Fatalf("the change came %s after the first event, want at least %s", gap, handlers.StreamMinInterval)
	}
}

// TestStreamEndsWhenTheBackfillIsDone: a backfill page's stream says "done"
// (the page's sse-close) once the backfill has finished, after its last
// update, and ends, so that a page left open on a finished backfill holds
// no stream; the summary it then fetches takes away "the page updates by
// itself". Before, the stream stayed open (30 min, then reconnected).
func TestStreamEndsWhenTheBackfillIsDone(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	resp := openStream(t, env, b.ID)
	body, err := io.ReadAll(resp.Body) // ends when the stream does
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(body), "event: update\ndata: changed\n\nevent: done\ndata: finished\n\n") && !strings.HasSuffix(string(body), "data: connected\n\nevent: done\ndata: finished\n\n") {
		t.Fatalf("the stream ended with %q, want an update then done", body)
	}
	pgWaitState(t, env, b.ID, db.BackfillSucceeded)
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID+"/summary")
	if p := doc.Find(`#bf-refresh[hx-swap-oob]`); p.Length() != 1 || strings.TrimSpace(p.Text()) != "" {
		t.Errorf("the finished backfill's summary does not clear the page's 'updates by itself' line")
	}
	// A finished backfill's page has no stream nor that line to begin with.
	_, doc = pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	if doc.Find(`[sse-connect]`).Length() != 0 || doc.Find(`[data-testid="refresh"]`).Length() != 0 {
		t.Errorf("a finished backfill's page streams or says it updates by itself")
	}
}

// TestQueuedChunkLooksQueued: a chunk that waits for another run's lease
// is drawn as queued (the legend's Q swatch) in the chunk table, not with
// the running pattern; its run page, no attempt started, says there is no
// log yet instead of "Log attempt 0" over an empty box; and the preview of
// a backfill over partitions another run builds says they will wait, not
// that they are skipped (they are built, after). Found by the UI audit.
func TestQueuedChunkLooksQueued(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, `assets:
  s.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 30s}}
`, true)
	a := pgCreateBF(t, eng, "s.daily", "2025-01-01", "2025-01-01", 1)
	testkit.Eventually(t, 20*time.Second, "backfill A's run to start", func() bool {
		b, _ := env.Store.Backfill(context.Background(), a.ID)
		return b.RunsRunning == 1
	})
	op := env.Client(t, auth.RoleOperator)
	// A running chunk says since when it runs (a duration so far froze
	// between the table's updates; found by the UI audit).
	_, page := pgGet(t, env, op, "/backfills/"+a.ID)
	if d := page.Find(`[data-testid="chunk-row"][data-state="running"] td`).Eq(5).Text(); !strings.HasPrefix(d, "since ") || !strings.HasSuffix(d, " UTC") {
		t.Errorf("running chunk's duration cell %q, want since HH:MM:SS UTC", d)
	}
	doc := pgDoc(t, env.SessionPost(t, op, "/backfills/preview", url.Values{"asset": {"s.daily"}, "selector": {"range"},
		"start": {"2025-01-01"}, "end": {"2025-01-02"}, "chunk_size": {"1"}, "max_concurrent_runs": {"2"}}))
	if h := doc.Find(`h3:has([data-testid="preview-skipped"])`).Text(); !strings.Contains(h, "Will wait for another run: 1") {
		t.Errorf("preview heading %q, want Will wait for another run: 1", h)
	}
	b := pgCreateBF(t, eng, "s.daily", "2025-01-01", "2025-01-01", 1)
	var run db.Run
	testkit.Eventually(t, 20*time.Second, "backfill B's chunk to be planned and wait", func() bool {
		runs, _ := env.Store.Runs(context.Background(), b.ID, nil, -1, 10)
		if len(runs) == 1 {
			run = runs[0]
		}
		return len(runs) == 1 && runs[0].State == db.RunQueued
	})
	_, doc = pgGet(t, env, op, "/backfills/"+b.ID)
	if cls := doc.Find(`[data-testid="chunk-row"][data-state="queued"] .sw`).AttrOr("class", ""); !strings.Contains(cls, "s-q") {
		t.Errorf("queued chunk swatch class %q, want s-q", cls)
	}
	_, doc = pgGet(t, env, op, "/runs/"+run.ID)
	if doc.Find(`[data-testid="log-attempt"]`).Length() != 0 || !strings.Contains(doc.Find(`[data-testid="run-log-none"]`).Text(), "No attempt has started yet") {
		t.Errorf("the run page of a chunk never started shows a log of attempt 0")
	}
}

// openStream opens backfill id's live stream as an admin.
func openStream(t *testing.T, env *testkit.Env, id string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/backfills/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream of %s: %d", id, resp.StatusCode)
	}
	return resp
}
