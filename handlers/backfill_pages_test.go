package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

func TestBackfillPageParts(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-31", 3)
	c := env.Client(t, auth.RoleViewer)
	doc := okPage(t, env, c, "/backfills/"+b.ID)
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
	resp := testkit.GetNoBody(t, c, env.URL+"/backfills/"+b.ID+"/actions?v="+fmt.Sprint(b.StateVersion))
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

// TestBackfillPageQueuedIsNotRunning: chunks waiting for a retry's backoff
// are counted as queued, not running; the counts add up to the selection.
func TestBackfillPageQueuedIsNotRunning(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("q.flaky", testkit.Daily, "retries: {max_attempts: 3, backoff: 1h}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
	), true)
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
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("r.flaky", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 2, backoff: 1h}", "executor: {demo: {duration: 1ms, failure_rate: 1}}"),
	), true)
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
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
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

// TestQueuedChunkLooksQueued: a chunk that waits for another run's lease
// is drawn as queued (the legend's Q swatch) in the chunk table, not with
// the running pattern; its run page, no attempt started, says there is no
// log yet instead of "Log attempt 0" over an empty box; and the preview of
// a backfill over partitions another run builds says they will wait, not
// that they are skipped (they are built, after). Found by the UI audit.
func TestQueuedChunkLooksQueued(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("s.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 30s}}"),
	), true)
	a := pgCreateBF(t, eng, "s.daily", "2025-01-01", "2025-01-01", 1)
	testkit.Eventually(t, 20*time.Second, "backfill A's run to start", func() bool {
		b, _ := env.Store.Backfill(t.Context(), a.ID)
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
		runs, _ := env.Store.Runs(t.Context(), b.ID, nil, -1, 10)
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

// failDay fails one partition on every attempt and builds the rest of its
// chunk; every other chunk runs until canceled.
type failDay string

func (f failDay) Execute(ctx context.Context, w jobs.Work) jobs.Result {
	if !strings.Contains(strings.Join(w.Partitions, ","), string(f)) {
		<-ctx.Done()
		return jobs.Result{State: db.AttemptCanceled, Err: ctx.Err()}
	}
	res := jobs.Result{Parts: map[string]jobs.PartResult{}}
	for _, p := range w.Partitions {
		if p == string(f) {
			res.Parts[p] = jobs.PartResult{Partition: p, Status: db.StatusFailed, Error: "bad day"}
			res.Err = errors.New("bad day")
			continue
		}
		res.Parts[p] = jobs.PartResult{Partition: p, Status: db.StatusMaterialized}
	}
	return res
}

// TestBackfillCountsQueuedRetryOnce: a chunk of 3 whose first attempt built
// 2 partitions and waits to retry the third counts 2 succeeded and 1 queued,
// not 2 succeeded and 3 queued (which left pending 2 short).
func TestBackfillCountsQueuedRetryOnce(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("r.daily", testkit.Daily, "retries: {max_attempts: 3, backoff: 1h}"),
	)
	eng := env.StartEngine(t, jobs.Options{Executor: failDay("2025-01-02")})
	b := pgCreateBF(t, eng, "r.daily", "2025-01-01", "2025-01-30", 3)
	// Chunk 0 waits an hour to retry; chunks 1 and 2 run (2 at a time).
	testkit.Eventually(t, 10*time.Second, "chunk 0 to wait for its retry while chunks 1 and 2 run", func() bool {
		runs, err := env.Store.Runs(t.Context(), b.ID, nil, -1, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 3 && runs[0].State == db.RunQueued && runs[0].Attempts == 1 && runs[1].State == db.RunRunning && runs[2].State == db.RunRunning
	})
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	count := func(k string) string {
		return strings.TrimSpace(doc.Find(`[data-testid="count-` + k + `"] b`).Text())
	}
	if count("succeeded") != "2" || count("queued") != "1" || count("running") != "6" || count("pending") != "21" {
		t.Errorf("counts succeeded %q running %q queued %q pending %q; want 2, 6, 1 and 21 of 30", count("succeeded"), count("running"), count("queued"), count("pending"))
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
	if got := rdoc.Find(`[data-testid="run-log"]`).Text(); !strings.Contains(got, "demo: done: 2 materialized, 0 failed") {
		t.Errorf("the run page shows the log %q, want the demo executor's lines", got)
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
	resp0 := testkit.GetNoBody(t, c, env.URL+runHref+"/stream?once=1")
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
	child, err := env.Store.Backfill(t.Context(), strings.TrimPrefix(loc, "/backfills/"))
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

func TestRunPageTailsTheLiveLog(t *testing.T) {
	t.Parallel()
	// Its command runs until the test cancels it: a shorter one (t.cmd
	// sleeps 3 s) could end before a loaded machine showed its page.
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("t.tail", "{static: [x]}", "code_version: v1", testkit.Shell(`echo "tail me $TESSERA_PARTITIONS"; sleep 120`)),
	), true)
	b := pgCreateBF(t, eng, "t.tail", "", "", 1)
	c := env.Client(t, auth.RoleViewer)
	var doc *goquery.Document
	testkit.Eventually(t, 10*time.Second, "the run page to show the running attempt's output", func() bool {
		runs, err := env.Store.Runs(t.Context(), b.ID, nil, -1, 1)
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
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActCancel, 0, true, "tester"); err != nil {
		t.Fatal(err)
	}
}

// TestRunPageShowsEachAttemptsLog: after a retry succeeded, the failed
// attempt's log (the one that explains the failure) is still one click away
// on the run page, and in the API with ?attempt=N.
func TestRunPageShowsEachAttemptsLog(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("l.retry", testkit.Daily, "retries: {max_attempts: 2, backoff: 1ms}", testkit.Shell(`echo "output of attempt $TESSERA_ATTEMPT"; test "$TESSERA_ATTEMPT" != 1`)),
	), true)
	ctx := t.Context()
	b := pgCreateBF(t, eng, "l.retry", "2025-01-01", "2025-01-01", 1)
	pgWaitState(t, env, b.ID, db.BackfillSucceeded)
	runs, err := env.Store.Runs(ctx, b.ID, nil, -1, 1)
	if err != nil || len(runs) != 1 || runs[0].Attempts != 2 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	id := runs[0].ID
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/runs/"+id)
	if l := doc.Find(`[data-testid="run-log"]`).Text(); !strings.Contains(l, "output of attempt 2") {
		t.Fatalf("default log: %q", l)
	}
	href, ok := doc.Find(`[data-testid="attempt"][data-state="failed"] [data-testid="attempt-log-link"]`).Attr("href")
	if !ok {
		t.Fatal("the failed attempt has no link to its log")
	}
	_, doc = pgGet(t, env, c, href)
	if l := doc.Find(`[data-testid="run-log"]`).Text(); !strings.Contains(l, "output of attempt 1") {
		t.Errorf("%s: log %q, want attempt 1's", href, l)
	}
	if h := doc.Find(`[data-testid="log-attempt"]`).Text(); h != "attempt 1" {
		t.Errorf("log heading %q", h)
	}
	resp, err := c.Get(env.URL + "/api/v1/runs/" + id + "?attempt=1")
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		LogTail string `json:"log_tail"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rj)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(rj.LogTail, "output of attempt 1") {
		t.Errorf("api ?attempt=1: %d %q", resp.StatusCode, rj.LogTail)
	}
	resp = testkit.GetNoBody(t, c, env.URL+"/api/v1/runs/"+id+"?attempt=9")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("api ?attempt=9: %d, want 400", resp.StatusCode)
	}
}

// TestRunPartitionsSayWhyTheyFailed: a partition the command reported
// failed without a message, and a downstream partition skipped for it, both
// carry a reason on the run page and in the API (they had an empty error).
func TestRunPartitionsSayWhyTheyFailed(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("e.up", testkit.Daily, "retries: {max_attempts: 1}", testkit.Shell(`for p in $TESSERA_PARTITIONS; do s=materialized; [ "$p" = 2025-01-02 ] && s=failed; printf "{\"partition\":\"%s\",\"status\":\"%s\"}\n" "$p" "$s" >> "$TESSERA_REPORT"; done`)),
		testkit.Asset("e.down", testkit.Daily, "deps: [e.up]", "retries: {max_attempts: 1}"),
	), true)
	ctx := t.Context()
	b := testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{"e.up", "e.down"}, ChunkSize: 2, MaxConcurrentRuns: 2,
		Selector: jobs.Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}})
	pgWaitState(t, env, b.ID, db.BackfillFailed)
	runs, err := env.Store.Runs(ctx, b.ID, nil, -1, 10)
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
