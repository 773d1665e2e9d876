package handlers_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

var relaunchWorkspace = pgWorkspace + `  t.multi:
    partitions:
      multi:
        date: {daily: {start: "2025-01-01"}}
        region: {static: [eu, us]}
    code_version: v1
    executor: {demo: {duration: 5ms}}
`

// TestBackfillRelaunchWhatItDidNotBuild: a canceled or failed backfill's
// page offers operators "Backfill what it did not build…", which opens the
// new-backfill form prefilled with its assets, range, dimension filter,
// chunk size and concurrency and "Only missing and failed" (a key list: the
// keys still missing or failed), so that the preview counts only what is
// left; viewers and other states get nothing, and a selection the form
// cannot hold says so with the CLI and API alternative.
func TestBackfillRelaunchWhatItDidNotBuild(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, relaunchWorkspace, false)
	op, viewer := env.Client(t, auth.RoleOperator), env.Client(t, auth.RoleViewer)
	setState := func(id, state string, materialized, failed int64) {
		t.Helper()
		env.Exec(t, `UPDATE backfills SET state=?, partitions_materialized=?, partitions_failed=?, runs_failed=? WHERE id=?`,
			state, materialized, failed, min(failed, 1), id)
	}
	create := func(req jobs.Request) db.Backfill { return testkit.CreateBackfill(t, eng, req) }
	// relaunchLink is an operator's page of backfill id, its Relaunch link
	// and the link parsed.
	relaunchLink := func(id string) (*goquery.Document, string, *url.URL) {
		t.Helper()
		_, doc := pgGet(t, env, op, "/backfills/"+id)
		href, _ := doc.Find(`a[data-testid="action-relaunch"]`).Attr("href")
		u, err := url.Parse(href)
		if err != nil {
			t.Fatalf("relaunch href %q: %v", href, err)
		}
		return doc, href, u
	}
	// 01-03 materialized (by the backfill, say), 04 failed, the rest never run.
	if r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-02","status":"materialized"},{"asset":"t.daily","partition":"2025-01-03","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-04","status":"failed","error":"boom"}]`); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	b := create(jobs.Request{Assets: []string{"t.daily"}, Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-10"},
		ChunkSize: 3, MaxConcurrentRuns: 2, Priority: 5, Title: "january"})

	for _, tc := range []struct {
		state string
		want  bool
	}{
		{db.BackfillPending, false}, {db.BackfillRunning, false}, {db.BackfillPaused, false}, {db.BackfillCanceling, false},
		{db.BackfillSucceeded, false}, {db.BackfillCanceled, true}, {db.BackfillFailed, true},
	} {
		setState(b.ID, tc.state, 3, 1)
		_, doc := pgGet(t, env, op, "/backfills/"+b.ID)
		if got := doc.Find(`[data-testid="action-relaunch"]`).Length() == 1; got != tc.want {
			t.Errorf("%s: relaunch offered %v, want %v", tc.state, got, tc.want)
		}
		_, vdoc := pgGet(t, env, viewer, "/backfills/"+b.ID)
		if vdoc.Find(`[data-testid="action-relaunch"]`).Length() != 0 || vdoc.Find(`[data-testid="relaunch-note"]`).Length() != 0 {
			t.Errorf("%s: a viewer is offered the relaunch", tc.state)
		}
	}
	// Everything built: nothing to offer.
	setState(b.ID, db.BackfillCanceled, 10, 0)
	if _, doc := pgGet(t, env, op, "/backfills/"+b.ID); doc.Find(`[data-testid="relaunch"], [data-testid="action-relaunch"]`).Length() != 0 {
		t.Error("a backfill that built everything offers the relaunch")
	}

	// FAILED: both buttons, which read differently.
	setState(b.ID, db.BackfillFailed, 3, 1)
	_, doc := pgGet(t, env, op, "/backfills/"+b.ID)
	retry := doc.Find(`[data-testid="action-retry-failed"]`)
	relaunch := doc.Find(`[data-testid="action-relaunch"]`)
	if retry.Length() != 1 || relaunch.Length() != 1 || strings.TrimSpace(retry.Text()) == strings.TrimSpace(relaunch.Text()) {
		t.Fatalf("failed backfill: retry %q, relaunch %q", retry.Text(), relaunch.Text())
	}
	if !strings.Contains(relaunch.Text(), "did not build") {
		t.Errorf("relaunch reads %q", relaunch.Text())
	}

	// CANCELED: the link opens the form prefilled with the rest of its
	// range, from the first chunk it did not finish; its preview counts
	// what is left. Chunk 0 (01-03) succeeded, chunk 1 (04-06) was
	// canceled, chunk 2 (07-09) succeeded before the cancel, chunk 3 (10)
	// was never planned. ("Only missing and failed" would leave out what it
	// never reached that was built before: a canceled rebuild.)
	setState(b.ID, db.BackfillCanceled, 6, 0)
	for i, r := range []struct{ state, first, last string }{{"succeeded", "2025-01-01", "2025-01-03"}, {"canceled", "2025-01-04", "2025-01-06"}, {"succeeded", "2025-01-07", "2025-01-09"}} {
		env.Exec(t, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key, state, max_attempts, created_at, updated_at)
			VALUES (?,?,?,?,0,'t.daily',(SELECT id FROM assets WHERE key='t.daily'),'f',3,?,?,?,3,0,0)`, fmt.Sprintf("run_r%d", i), fmt.Sprintf("k%d", i), b.ID, i, r.first, r.last, r.state)
	}
	env.Exec(t, `UPDATE backfills SET next_chunk=3 WHERE id=?`, b.ID)
	doc, href, u := relaunchLink(b.ID)
	if u.Path != "/backfills/new" {
		t.Fatalf("relaunch href %q", href)
	}
	want := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-04"}, "end": {"2025-01-10"},
		"chunk_size": {"3"}, "max_concurrent_runs": {"2"}, "priority": {"5"}, "title": {"Rest of january"}}
	if got := u.Query(); got.Encode() != want.Encode() {
		t.Errorf("relaunch query\n got %s\nwant %s", got.Encode(), want.Encode())
	}
	if note := doc.Find(`[data-testid="relaunch-note"]`).Text(); !strings.Contains(note, "the rest of its range, from the first chunk it did not finish: range 2025-01-04 … 2025-01-10") ||
		!strings.Contains(note, "what it built before 2025-01-04 is left out (the 1 chunk it finished after that point run again)") {
		t.Errorf("relaunch note %q", note)
	}
	_, form := pgGet(t, env, op, href)
	checkForm(t, form, "range", map[string]string{"start": "2025-01-04", "end": "2025-01-10", "chunk-size": "3", "max-concurrent": "2", "priority": "5"})
	if !form.Find(`input[data-testid="selector-range"]`).Is("[checked]") || !form.Find(`input[data-testid="asset-t.daily"]`).Is("[checked]") {
		t.Error("range: the form does not tick t.daily and Range")
	}
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "7" {
		t.Errorf("range: the preview counts %q partitions, want 7 (04-10)", n)
	}
	// Nothing planned yet: the whole range again.
	env.Exec(t, `DELETE FROM runs WHERE backfill_id=?`, b.ID)
	env.Exec(t, `UPDATE backfills SET next_chunk=0 WHERE id=?`, b.ID)
	_, href, u = relaunchLink(b.ID)
	if u.Query().Get("start") != "2025-01-01" || u.Query().Get("selector") != "range" {
		t.Errorf("relaunch of a backfill canceled before its first chunk: %s", href)
	}
	// A backfill canceled after its last planned chunk succeeded, with
	// chunks never planned: from the first of those (2025-01-10).
	env.Exec(t, `INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, first_key, last_key, state, max_attempts, created_at, updated_at)
		VALUES ('run_s0','s0',?,0,0,'t.daily',(SELECT id FROM assets WHERE key='t.daily'),'f',3,'2025-01-01','2025-01-03','succeeded',3,0,0),
		       ('run_s1','s1',?,1,0,'t.daily',(SELECT id FROM assets WHERE key='t.daily'),'f',3,'2025-01-04','2025-01-06','succeeded',3,0,0),
		       ('run_s2','s2',?,2,0,'t.daily',(SELECT id FROM assets WHERE key='t.daily'),'f',3,'2025-01-07','2025-01-09','succeeded',3,0,0)`, b.ID, b.ID, b.ID)
	env.Exec(t, `UPDATE backfills SET next_chunk=3 WHERE id=?`, b.ID)
	_, href, u = relaunchLink(b.ID)
	if u.Query().Get("start") != "2025-01-10" || u.Query().Get("end") != "2025-01-10" {
		t.Errorf("relaunch from the first chunk never planned: %s", href)
	}

	// A filter with one dimension value and a status: the same, plus failed.
	fb := create(jobs.Request{Assets: []string{"t.multi"}, ChunkSize: 1, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "filter", Start: "2025-01-01", End: "2025-01-05", Statuses: []string{"missing"}, Dimensions: map[string][]string{"region": {"eu"}}}})
	setState(fb.ID, db.BackfillCanceled, 0, 0)
	_, href, u = relaunchLink(fb.ID)
	if q := u.Query(); q.Get("selector") != "missing_failed" || q.Get("dimension") != "region=eu" || q.Get("start") != "2025-01-01" || q.Get("end") != "2025-01-05" {
		t.Errorf("filter relaunch query %s", u.RawQuery)
	}
	_, form = pgGet(t, env, op, href)
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "5" {
		t.Errorf("filter: the preview counts %q, want 5 (%s)", n, form.Find(`[data-testid="preview-error"]`).Text())
	}
	tb := create(jobs.Request{Assets: []string{"t.daily"}, ChunkSize: 1, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "filter", Start: "2025-01-01", End: "2025-01-10", Statuses: []string{"failed", "stale"}}})
	setState(tb.ID, db.BackfillCanceled, 0, 0)
	_, _, u = relaunchLink(tb.ID)
	if q := u.Query(); q.Get("selector") != "statuses" || strings.Join(q["status"], ",") != "failed,stale" {
		t.Errorf("stale filter relaunch query %s", u.RawQuery)
	}
	// Two dimension values: the form's filter takes one; the page says so.
	mb := create(jobs.Request{Assets: []string{"t.multi"}, ChunkSize: 1, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "filter", Start: "2025-01-01", End: "2025-01-02", Dimensions: map[string][]string{"region": {"eu", "us"}}}})
	setState(mb.ID, db.BackfillCanceled, 0, 0)
	_, doc = pgGet(t, env, op, "/backfills/"+mb.ID)
	if doc.Find(`[data-testid="action-relaunch"]`).Length() != 0 {
		t.Error("two dimension values: a relaunch the form cannot hold is offered")
	}
	if msg := doc.Find(`[data-testid="relaunch-unavailable"]`).Text(); !strings.Contains(msg, "region = eu or us") || !strings.Contains(msg, "tessera backfill create t.multi") ||
		!strings.Contains(msg, "POST /api/v1/backfills") || doc.Find(`[data-testid="relaunch-api"]`).AttrOr("href", "") != "/api/v1/openapi.json" {
		t.Errorf("two dimension values: %q", msg)
	}

	// An explicit list: the keys still missing or failed.
	eb := create(jobs.Request{Assets: []string{"t.daily"}, ChunkSize: 2, MaxConcurrentRuns: 3,
		Selector: jobs.Selector{Type: "explicit", Keys: []string{"2025-01-02", "2025-01-04", "2025-01-20", "2025-01-21"}}})
	setState(eb.ID, db.BackfillCanceled, 1, 0)
	doc, href, u = relaunchLink(eb.ID)
	if q := u.Query(); q.Get("selector") != "explicit" || q.Get("keys") != "2025-01-04\n2025-01-20\n2025-01-21" || q.Get("chunk_size") != "2" || q.Get("max_concurrent_runs") != "3" {
		t.Errorf("explicit relaunch query %q", u.RawQuery)
	}
	if note := doc.Find(`[data-testid="relaunch-note"]`).Text(); !strings.Contains(note, "the 3 keys of its list that are missing or failed now (1 of its 4 is materialized)") {
		t.Errorf("explicit relaunch note %q", note)
	}
	_, form = pgGet(t, env, op, href)
	if keys := form.Find(`textarea[data-testid="keys"]`).Text(); keys != "2025-01-04\n2025-01-20\n2025-01-21" || !form.Find(`input[data-testid="selector-explicit"]`).Is("[checked]") {
		t.Errorf("explicit: form keys %q", keys)
	}
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "3" {
		t.Errorf("explicit: the preview counts %q, want 3", n)
	}

	// A long list: too long for an address, posted to the form's preview.
	var long []string
	day := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := range 400 {
		long = append(long, day.AddDate(0, 0, i).Format("2006-01-02"))
	}
	lb := create(jobs.Request{Assets: []string{"t.daily"}, ChunkSize: 50, MaxConcurrentRuns: 2, Selector: jobs.Selector{Type: "explicit", Keys: long}})
	setState(lb.ID, db.BackfillCanceled, 0, 0)
	_, doc = pgGet(t, env, op, "/backfills/"+lb.ID)
	rf := doc.Find(`form[data-testid="relaunch-form"]`)
	if rf.Length() != 1 || rf.AttrOr("action", "") != "/backfills/preview" || rf.AttrOr("method", "") != "post" {
		t.Fatalf("long list: no form posting to the preview: %d", rf.Length())
	}
	posted := url.Values{}
	rf.Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
		posted.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	if posted.Get("_csrf") == "" || posted.Get("keys") != strings.Join(long, "\n") {
		t.Fatalf("long list: posted fields %d keys, csrf %q", len(strings.Split(posted.Get("keys"), "\n")), posted.Get("_csrf"))
	}
	resp := env.SessionPost(t, op, "/backfills/preview", posted)
	form = pgDoc(t, resp)
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); resp.StatusCode != 200 || n != "400" ||
		form.Find(`input[data-testid="chunk-size"]`).AttrOr("value", "") != "50" {
		t.Errorf("long list: status %d, preview counts %q, chunk size %q", resp.StatusCode, n, form.Find(`input[data-testid="chunk-size"]`).AttrOr("value", ""))
	}

	// More keys than the form takes: said, with the CLI and the API.
	env.Exec(t, `UPDATE backfill_segments SET partitions=? WHERE backfill_id=?`, handlers.MaxFormKeys+1, lb.ID)
	_, doc = pgGet(t, env, op, "/backfills/"+lb.ID)
	msg := doc.Find(`[data-testid="relaunch-unavailable"]`).Text()
	if doc.Find(`[data-testid="action-relaunch"]`).Length() != 0 || !strings.Contains(msg, fmt.Sprintf("holds %s keys", "100,001")) ||
		!strings.Contains(msg, "form takes (100,000)") || !strings.Contains(msg, "tessera backfill create t.daily --partitions-file FILE --chunk-size 50 --concurrency 2") {
		t.Errorf("over the form's keys: %q", msg)
	}
	if n := pgCountBackfills(t, env); n != 6 {
		t.Errorf("%d backfills: opening the relaunch form launched something", n)
	}
}

// checkForm checks the values of the new-backfill form's inputs by data-testid.
func checkForm(t *testing.T, doc *goquery.Document, what string, want map[string]string) {
	t.Helper()
	for id, v := range want {
		if got := doc.Find(`input[data-testid="`+id+`"]`).AttrOr("value", ""); got != v {
			t.Errorf("%s: form %s = %q, want %q", what, id, got, v)
		}
	}
}
