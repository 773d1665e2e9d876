package handlers_test

import (
	"context"
	"encoding/json"
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

// TestRunPageShowsEachAttemptsLog: after a retry succeeded, the failed
// attempt's log (the one that explains the failure) is still one click away
// on the run page, and in the API with ?attempt=N.
func TestRunPageShowsEachAttemptsLog(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, testkit.Assets(
		testkit.Asset("l.retry", testkit.Daily, "retries: {max_attempts: 2, backoff: 1ms}", `executor:
  command: ['echo "output of attempt $TESSERA_ATTEMPT"; test "$TESSERA_ATTEMPT" != 1']
  shell: true`),
	), true)
	ctx := context.Background()
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
		testkit.Asset("e.up", testkit.Daily, "retries: {max_attempts: 1}", `executor:
  command: ['for p in $TESSERA_PARTITIONS; do s=materialized; [ "$p" = 2025-01-02 ] && s=failed; printf "{\"partition\":\"%s\",\"status\":\"%s\"}\n" "$p" "$s" >> "$TESSERA_REPORT"; done']
  shell: true`),
		testkit.Asset("e.down", testkit.Daily, "deps: [e.up]", "retries: {max_attempts: 1}"),
	), true)
	ctx := context.Background()
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
