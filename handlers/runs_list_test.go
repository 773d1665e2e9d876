package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// runsFixture is two backfills with runs written as the engine would have
// left them: t.daily's 60 runs queued a minute apart from base (every
// tenth from the fourth failed, the last two running), and t.flaky's 5
// failed runs queued together between them at base+30.5 min. want is every
// run, newest first (then by id, descending).
type runsFixture struct {
	env       *testkit.Env
	base      int64
	daily     db.Backfill
	flaky     db.Backfill
	want      []string // ids, newest first
	at        map[string]int64
	failed    int
	dailyRuns []db.FixtureRun
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Helper()
	env, eng := pgEnv(t, false)
	f := &runsFixture{env: env, base: db.Millis(time.Now().Add(-3 * time.Hour).Truncate(time.Minute)), at: map[string]int64{}}
	f.daily = pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-03-01", 1)
	f.flaky = pgCreateBF(t, eng, "t.flaky", "2025-01-01", "2025-01-05", 1)
	ids := env.Handler.Workspace().IDs
	seed := func(b db.Backfill, asset string, n int, at func(i int) int64, state func(i int) string) []db.FixtureRun {
		var runs []db.FixtureRun
		for i := range n {
			st := state(i)
			r := db.FixtureRun{ID: fmt.Sprintf("run_%s_%02d", asset, i), RunKey: fmt.Sprintf("backfill:%s:chunk:%d", b.ID, i), Asset: asset,
				Fingerprint: "fp", FirstKey: fmt.Sprintf("2025-01-%02d", i%28+1), LastKey: fmt.Sprintf("2025-01-%02d", i%28+1),
				Chunk: int64(i), Partitions: 1, State: st, At: at(i), End: at(i) + 1500}
			if st != db.RunRunning {
				end := r.End
				r.FinishedAt = &end
			}
			if st == db.RunFailed {
				e := "boom"
				r.Error = &e
				f.failed++
			}
			f.at[r.ID] = r.At
			runs = append(runs, r)
		}
		if err := env.Store.SeedRunsFixture(t.Context(), b.ID, ids[asset], runs, db.FixtureProgress{NextChunk: int64(n), StartedAt: at(0)}); err != nil {
			t.Fatal(err)
		}
		return runs
	}
	f.dailyRuns = seed(f.daily, "t.daily", 60, func(i int) int64 { return f.base + int64(i)*60_000 }, func(i int) string {
		switch {
		case i >= 58:
			return db.RunRunning
		case i%10 == 3:
			return db.RunFailed
		}
		return db.RunSucceeded
	})
	// Planned together, as the engine plans a batch: the same created_at.
	seed(f.flaky, "t.flaky", 5, func(int) int64 { return f.base + 30*60_000 + 30_000 }, func(int) string { return db.RunFailed })
	for id := range f.at {
		f.want = append(f.want, id)
	}
	slices.SortFunc(f.want, func(a, b string) int {
		if f.at[a] != f.at[b] {
			return int(f.at[b] - f.at[a])
		}
		return strings.Compare(b, a)
	})
	return f
}

// ids lists the run ids of a /runs page, in order.
func runIDs(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="run-row"]`).Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-id", "")) })
	return out
}

// The runs page lists every backfill's runs newest first, 50 a page, each
// linking to its run page and its backfill (by title), with durations;
// the filters are the page's address and narrow it on the server.
func TestRunsPageListsFiltersAndPages(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	c := f.env.Client(t, auth.RoleViewer)
	status, doc := pgGet(t, f.env, c, "/runs")
	if status != http.StatusOK {
		t.Fatalf("/runs: %d", status)
	}
	if cur := doc.Find(`[data-testid="nav-runs"]`); cur.AttrOr("aria-current", "") != "page" || cur.AttrOr("href", "") != "/runs" {
		t.Errorf("the main nav's Runs link: %v", cur.Nodes)
	}
	page1 := runIDs(doc)
	if !slices.Equal(page1, f.want[:handlers.RunsPageSize]) {
		t.Fatalf("first page %v\nwant %v", page1, f.want[:handlers.RunsPageSize])
	}
	first := doc.Find(`[data-testid="run-row"]`).First()
	if href := first.Find(`[data-testid="run-link"]`).AttrOr("href", ""); href != "/runs/"+page1[0] {
		t.Errorf("run link %q", href)
	}
	// The newest is t.daily's chunk 59, running: its duration counts up.
	if bf := first.Find(`[data-testid="run-backfill"]`); bf.Text() != "test t.daily" || bf.AttrOr("href", "") != handlers.BackfillHref(f.daily.ID) {
		t.Errorf("backfill cell %q → %q", bf.Text(), bf.AttrOr("href", ""))
	}
	// The backfill filter offers the backfills by title (the option's value
	// is the id the filter takes).
	if o := doc.Find(`[data-testid="runs-backfill-choices"] option[value="` + f.daily.ID + `"]`); o.Text() != "test t.daily" {
		t.Errorf("the backfill filter offers %q for %s, want its title", o.Text(), f.daily.ID)
	}
	if by := first.Find(`[data-testid="run-launched-by"]`).Text(); by != "by tester" {
		t.Errorf("launched %q, want by tester", by)
	}
	finished := doc.Find(`[data-testid="run-row"][data-state="succeeded"]`).First()
	if d := strings.TrimSpace(finished.Find(`[data-testid="run-duration"]`).Text()); d != "1.5 s" {
		t.Errorf("a finished run's duration %q, want 1.5 s", d)
	}
	if doc.Find(`[data-testid="runs-first"]`).Length() != 0 {
		t.Error("the first page links to the first page")
	}
	next, ok := doc.Find(`[data-testid="runs-next"]`).Attr("href")
	if !ok {
		t.Fatal("no next page")
	}
	_, doc = pgGet(t, f.env, c, next)
	if got := runIDs(doc); !slices.Equal(got, f.want[handlers.RunsPageSize:]) {
		t.Errorf("second page %v\nwant %v", got, f.want[handlers.RunsPageSize:])
	}
	if doc.Find(`[data-testid="runs-next"]`).Length() != 0 || doc.Find(`[data-testid="runs-first"]`).AttrOr("href", "") != "/runs" {
		t.Error("the last page's pager")
	}

	count := func(q string) []string {
		t.Helper()
		status, doc := pgGet(t, f.env, c, "/runs?"+q)
		if status != http.StatusOK {
			t.Fatalf("/runs?%s: %d %s", q, status, doc.Find(`[data-testid="runs-error"]`).Text())
		}
		return runIDs(doc)
	}
	only := func(pred func(id string) bool) []string {
		var out []string
		for _, id := range f.want {
			if pred(id) {
				out = append(out, id)
			}
		}
		return out
	}
	dailyAt := func(i int) string {
		return url.QueryEscape(db.FromMillis(f.base + int64(i)*60_000).Format(time.RFC3339))
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"asset=t.flaky", only(func(id string) bool { return strings.HasPrefix(id, "run_t.flaky") })},
		{"backfill=" + f.flaky.ID, only(func(id string) bool { return strings.HasPrefix(id, "run_t.flaky") })},
		{"state=running", []string{"run_t.daily_59", "run_t.daily_58"}},
		{"state=failed&asset=t.daily", []string{"run_t.daily_53", "run_t.daily_43", "run_t.daily_33", "run_t.daily_23", "run_t.daily_13", "run_t.daily_03"}},
		{"state=running,FAILED&backfill=" + f.daily.ID + "&from=" + dailyAt(40), []string{"run_t.daily_59", "run_t.daily_58", "run_t.daily_53", "run_t.daily_43"}},
		// from inclusive, to exclusive; t.flaky's runs at 30.5 min fall between.
		{"from=" + dailyAt(28) + "&to=" + dailyAt(32), []string{"run_t.daily_31", "run_t.flaky_04", "run_t.flaky_03", "run_t.flaky_02", "run_t.flaky_01", "run_t.flaky_00",
			"run_t.daily_30", "run_t.daily_29", "run_t.daily_28"}},
	} {
		if got := count(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("/runs?%s: %v\nwant %v", tc.q, got, tc.want)
		}
	}
	// A filtered page shows its filters (the address is the view to share)
	// and pages with them.
	_, doc = pgGet(t, f.env, c, "/runs?asset=t.daily&backfill="+f.daily.ID)
	if doc.Find(`[data-testid="runs-asset"] option[selected]`).AttrOr("value", "") != "t.daily" || doc.Find(`[data-testid="runs-backfill"]`).AttrOr("value", "") != f.daily.ID {
		t.Error("the form does not show the filters of the address")
	}
	next = doc.Find(`[data-testid="runs-next"]`).AttrOr("href", "")
	if !strings.Contains(next, "asset=t.daily") || !strings.Contains(next, "backfill="+f.daily.ID) {
		t.Errorf("next page %q drops the filters", next)
	}
	if got := count(strings.TrimPrefix(next, "/runs?")); len(got) != 10 || got[0] != "run_t.daily_09" {
		t.Errorf("filtered second page %v", got)
	}
	if got := count("asset=t.daily&state=canceled"); len(got) != 0 {
		t.Errorf("no canceled runs, got %v", got)
	}
	if _, doc = pgGet(t, f.env, c, "/runs?state=canceled"); doc.Find(`[data-testid="runs-empty"]`).Length() != 1 {
		t.Error("no empty note for a filter matching nothing")
	}
}

// badRunFilters are filters the runs list refuses: the parameter named and
// words of the message that say how to fix it.
var badRunFilters = []struct{ q, field, says string }{
	{"asset=nope", "asset", `unknown asset "nope"`},
	{"state=done", "state", `unknown run state "done"; use queued, running, succeeded, failed, canceled`},
	{"backfill=bf_nope", "backfill", `no backfill "bf_nope"; use a backfill id as /backfills lists them`},
	{"from=yesterday", "from", `from must be a time, got "yesterday"; use RFC 3339 like 2025-01-15T12:00:00Z`},
	{"to=2025-13-01", "to", `to must be a time, got "2025-13-01"; use RFC 3339`},
	{"to=99999-01-01", "to", `to must be a time, got "99999-01-01"`},
	{"from=2025-01-02&to=2025-01-01", "to", "must be after from (2025-01-02T00:00:00Z): the list shows runs queued at or after from and before to"},
	{"from=2025-01-01&to=2025-01-01", "to", "must be after from"},
	{"cursor=zzz", "cursor", "is not one this list gave out; pass the next_cursor of the previous page"},
}

// A bad filter is a 400 page naming the parameter and how to fix it, with
// the form kept and that field marked.
func TestRunsPageRefusesBadFilters(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	c := f.env.Client(t, auth.RoleViewer)
	for _, tc := range badRunFilters {
		status, doc := pgGet(t, f.env, c, "/runs?"+tc.q)
		e := doc.Find(`[data-testid="runs-error"]`)
		says := tc.says
		if tc.field == "cursor" { // the API's words name next_cursor; the page's the link
			says = "this page link is out of date; go back to the first page"
		}
		if status != http.StatusBadRequest || e.AttrOr("data-field", "") != tc.field || !strings.Contains(e.Text(), says) {
			t.Errorf("/runs?%s: %d, field %q, %q; want 400 on %s saying %q", tc.q, status, e.AttrOr("data-field", ""), e.Text(), tc.field, says)
		}
		if doc.Find(`[data-testid="run-row"]`).Length() != 0 || doc.Find(`[data-testid="runs-filter"]`).Length() != 1 {
			t.Errorf("/runs?%s lists runs or drops the form", tc.q)
		}
		if tc.field != "cursor" {
			if inv := doc.Find(`[data-testid="runs-filter"] [name="`+tc.field+`"]`).AttrOr("aria-invalid", ""); inv != "true" {
				t.Errorf("/runs?%s: the %s field is not marked invalid (%q)", tc.q, tc.field, inv)
			}
		}
	}
}

// GET /api/v1/runs answers the same filters and pages by cursor; a bad
// filter is a 400 on that parameter.
func TestAPIRunListFiltersPagesAndRefuses(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tok := f.env.Token(t, auth.RoleViewer)
	list := func(q string) (int, map[string]any) {
		t.Helper()
		resp, body := testkit.APIRequest(t, f.env.URL, tok, "GET", "/api/v1/runs?"+q, "")
		m, _ := body.(map[string]any)
		return resp.StatusCode, m
	}
	// Pages of 31 cut t.flaky's runs, queued at the same instant, in two:
	// the cursor holds the id too.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		status, m := list("limit=31&cursor=" + url.QueryEscape(cursor))
		if status != http.StatusOK || pages > 5 {
			t.Fatalf("page %d: %d %v", pages, status, m)
		}
		for _, r := range m["runs"].([]any) {
			r := r.(map[string]any)
			got = append(got, r["id"].(string))
			if r["id"] == "run_t.daily_00" {
				if r["backfill_title"] != "test t.daily" || r["launched_by"] != "tester" || r["duration_ms"] != float64(1500) || r["state"] != "succeeded" {
					t.Errorf("run_t.daily_00: %v", r)
				}
			}
			if r["state"] == "running" && (r["duration_ms"] == nil || r["finished_at"] != nil) {
				t.Errorf("a running run: %v", r)
			}
		}
		if cursor = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if !slices.Equal(got, f.want) {
		t.Fatalf("paged API list %v\nwant %v", got, f.want)
	}
	if _, m := list("state=failed&asset=t.flaky&backfill=" + f.flaky.ID); len(m["runs"].([]any)) != 5 {
		t.Errorf("filtered: %v", m)
	}
	if _, m := list("state=failed"); len(m["runs"].([]any)) != f.failed {
		t.Errorf("state=failed: %d runs, want %d", len(m["runs"].([]any)), f.failed)
	}
	bad := append(badRunFilters[:len(badRunFilters):len(badRunFilters)],
		struct{ q, field, says string }{"limit=0", "limit", "limit must be a whole number from 1 to 500"},
		struct{ q, field, says string }{"limit=501", "limit", "limit must be a whole number from 1 to 500"})
	for _, tc := range bad {
		status, m := list(tc.q)
		e, _ := m["error"].(map[string]any)
		if status != http.StatusBadRequest || e["field"] != tc.field || !strings.Contains(fmt.Sprint(e["message"]), tc.says) {
			t.Errorf("GET /api/v1/runs?%s: %d %v; want 400 on %s saying %q", tc.q, status, m, tc.field, tc.says)
		}
	}
}
