package handlers_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// recoverWS has a static asset whose "bad" partitions fail while the file
// REC_FAIL exists, and build once it is gone.
const recoverWS = `
assets:
  rec.cmd:
    partitions: {static: [good1, bad1, good2, bad2]}
    retries: {max_attempts: 1}
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *bad*) if [ -e "$REC_FAIL" ]; then echo "failing $TESSERA_PARTITIONS"; exit 1; fi;; esac; echo "built $TESSERA_PARTITIONS"']
      shell: true
      env: {REC_FAIL: "%s"}
`

// recoveredRow finds the list row of backfill id and what it says about a
// recovery ("" when nothing).
func recoveredRow(t *testing.T, doc *goquery.Document, id string) (*goquery.Selection, string) {
	t.Helper()
	row := doc.Find(`[data-testid="backfill-row"][data-id="` + id + `"]`)
	if row.Length() != 1 {
		t.Fatalf("%d list rows of %s", row.Length(), id)
	}
	return row, strings.Join(strings.Fields(row.Find(`[data-testid="recovered"]`).Text()), " ")
}

// TestFailedBackfillRecoveredByRetry: a failed backfill whose Retry failed
// child rebuilt every failed partition reads "failed, recovered by retry"
// with a link to the child, in the list and on its page, and the API says
// recovered_by; the list's progress bar draws its failed partitions as
// failed. Before the retry succeeds (and while its child fails) it reads
// plain failed.
func TestFailedBackfillRecoveredByRetry(t *testing.T) {
	t.Parallel()
	env, flag := testkit.WithFlagFile(t, recoverWS)
	tok := env.Token(t, auth.RoleOperator)
	parent := apiCreate(t, env, tok, `{"assets":["rec.cmd"],"selector":{"type":"range","start":"good1","end":"bad2"},"chunk_size":1,"max_concurrent_runs":2}`)["id"].(string)
	apiWaitState(t, env, tok, parent, "FAILED")
	c := env.Client(t, auth.RoleViewer)

	// A failed backfill: its bar has a failed segment of 2 of 4 partitions
	// (drawn as failed, not as succeeded), and no word of a recovery.
	_, doc := pgGet(t, env, c, "/backfills")
	row, said := recoveredRow(t, doc, parent)
	if said != "" {
		t.Errorf("a failed backfill never retried reads %q", said)
	}
	failedW := row.Find(`[data-testid="progress-bar"] rect.s-f`).AttrOr("width", "")
	if failedW != "80.0" {
		t.Errorf("the list bar's failed segment is %q wide, want 80.0 of 160 (2 of 4 failed); bar: %s", failedW,
			row.Find(`[data-testid="progress-bar"] title`).Text())
	}

	// A retry that fails too recovers nothing.
	firstID := retryFailed(t, env, tok, parent, "r1", "FAILED")
	_, doc = pgGet(t, env, c, "/backfills")
	if _, said := recoveredRow(t, doc, parent); said != "" {
		t.Errorf("a backfill whose retry failed reads %q", said)
	}
	if _, b := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+parent, ""); b["recovered_by"] != nil {
		t.Errorf("recovered_by %v while the retry failed", b["recovered_by"])
	}

	// The retry of the retry builds them: both failed backfills are
	// recovered, each through its own child.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	secondID := retryFailed(t, env, tok, firstID, "r2", "SUCCEEDED")

	_, doc = pgGet(t, env, c, "/backfills")
	// The retry is named by its title (its id only in its link).
	names := map[string]string{firstID: "Retry failed: Backfill of rec.cmd", secondID: "Retry failed: Retry failed: Backfill of rec.cmd"}
	for parentID, childID := range map[string]string{parent: firstID, firstID: secondID} {
		row, said := recoveredRow(t, doc, parentID)
		if said != "failed, recovered by retry "+names[childID] {
			t.Errorf("list row of %s reads %q, want %q", parentID, said, "failed, recovered by retry "+names[childID])
		}
		if href := row.Find(`[data-testid="recovered"] a`).AttrOr("href", ""); href != "/backfills/"+childID {
			t.Errorf("list row of %s links %q, want the child", parentID, href)
		}
		if row.Find(`[data-testid="progress-bar"] rect.s-f`).Length() != 1 {
			t.Errorf("list row of %s draws no failed segment", parentID)
		}
	}
	if _, said := recoveredRow(t, doc, secondID); said != "" {
		t.Errorf("the succeeded retry reads %q", said)
	}

	_, doc = pgGet(t, env, c, "/backfills/"+parent)
	note := doc.Find(`[data-testid="backfill-top"] [data-testid="recovered"]`)
	if got := strings.Join(strings.Fields(note.Text()), " "); got != "failed, recovered by retry "+names[firstID] {
		t.Errorf("the parent's page reads %q", got)
	}
	if href := note.Find("a").AttrOr("href", ""); href != "/backfills/"+firstID {
		t.Errorf("the parent's page links %q", href)
	}

	_, b := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+parent, "")
	if b["recovered_by"] != firstID || b["state"] != "FAILED" {
		t.Errorf("API: state %v recovered_by %v, want FAILED and %s", b["state"], b["recovered_by"], firstID)
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	for _, x := range list["backfills"].([]any) {
		m := x.(map[string]any)
		want := map[string]any{parent: firstID, firstID: secondID}[m["id"].(string)]
		if m["recovered_by"] != want {
			t.Errorf("API list: %s recovered_by %v, want %v", m["id"], m["recovered_by"], want)
		}
	}
}

// TestBackfillListBarShowsFewFailures: one failed partition of 200 shows in
// the list: its bar's failed segment is drawn at least 2 of 160 units wide
// (to scale it was 0.8, and the bar read all green at "100% done"), and the
// row says "1 failed".
func TestBackfillListBarShowsFewFailures(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `
assets:
  few.days:
    partitions: {daily: {start: 2025-01-01}}
    retries: {max_attempts: 1}
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *2025-03-01*) echo "failing"; exit 1;; esac; echo "built $TESSERA_PARTITIONS"']
      shell: true
`})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	id := apiCreate(t, env, tok, `{"assets":["few.days"],"selector":{"type":"range","start":"2025-01-01","end":"2025-07-19"},"chunk_size":1,"max_concurrent_runs":8}`)["id"].(string)
	b := apiWaitState(t, env, tok, id, "FAILED")
	if b["total_partitions"].(float64) != 200 {
		t.Fatalf("total_partitions %v, want 200", b["total_partitions"])
	}
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills")
	row, _ := recoveredRow(t, doc, id)
	w, err := strconv.ParseFloat(row.Find(`[data-testid="progress-bar"] rect.s-f`).AttrOr("width", "0"), 64)
	if err != nil || w < 2 {
		t.Errorf("the failed segment is %v wide (%v), want at least 2 of 160", w, err)
	}
	total := 0.0
	row.Find(`[data-testid="progress-bar"] rect`).Each(func(_ int, s *goquery.Selection) {
		f, _ := strconv.ParseFloat(s.AttrOr("width", "0"), 64)
		total += f
	})
	if total < 159.8 || total > 160.2 {
		t.Errorf("the segments add up to %.1f, want 160", total)
	}
	if got := strings.TrimSpace(row.Find(`[data-testid="progress-failed"]`).Text()); got != "1 failed" {
		t.Errorf("the row says %q, want \"1 failed\"", got)
	}
}

// retryFailed retries backfill id's failed partitions through the API
// (request id rid) and waits for the child to end in state; it returns the
// child's id.
func retryFailed(t *testing.T, env *testkit.Env, tok, id, rid, state string) string {
	t.Helper()
	code, child := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+id+"/retry-failed", `{"retry_request_id":"`+rid+`"}`)
	if code != http.StatusCreated {
		t.Fatalf("retry-failed of %s: %d %v", id, code, child)
	}
	childID := child["id"].(string)
	apiWaitState(t, env, tok, childID, state)
	return childID
}

// TestRetryFailedRefusesWhatARetryDoesOrDid: a second retry-failed of a
// backfill (a script run twice, no request id) made a second child that
// built again what the first was building, or had rebuilt: the page offers
// no Retry failed once a retry exists, the API did. Now it is a 409 naming
// the retry while that one is unfinished, or once it rebuilt every failed
// partition; the first retry's request id still replays it.
func TestRetryFailedRefusesWhatARetryDoesOrDid(t *testing.T) {
	t.Parallel()
	hold := testkit.FlagFile(t, "hold")
	fail := testkit.FlagFile(t, "fail")
	env := testkit.New(t, testkit.Options{WorkspaceYAML: fmt.Sprintf(`
assets:
  rec.cmd:
    partitions: {static: [good1, bad1, good2, bad2]}
    retries: {max_attempts: 1}
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *bad*) if [ -e "$REC_FAIL" ]; then exit 1; fi; while [ -e "$REC_HOLD" ]; do sleep 0.05; done;; esac']
      shell: true
      env: {REC_FAIL: %q, REC_HOLD: %q}
`, fail, hold)})
	env.StartEngine(t, jobs.Options{})
	tok := env.Token(t, auth.RoleOperator)
	parent := apiCreate(t, env, tok, `{"assets":["rec.cmd"],"selector":{"type":"range","start":"good1","end":"bad2"},"chunk_size":1,"max_concurrent_runs":2}`)["id"].(string)
	apiWaitState(t, env, tok, parent, "FAILED")
	if err := os.Remove(fail); err != nil {
		t.Fatal(err)
	}
	code, child := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+parent+"/retry-failed", `{"retry_request_id":"r1"}`)
	if code != http.StatusCreated {
		t.Fatalf("first retry: %d %v", code, child)
	}
	childID := child["id"].(string)
	again := func(want string) {
		t.Helper()
		code, res := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+parent+"/retry-failed", `{}`)
		e, _ := res["error"].(map[string]any)
		if code != http.StatusConflict || e == nil || e["field"] != "state" || !strings.Contains(e["message"].(string), want) ||
			!strings.Contains(e["message"].(string), childID) {
			t.Fatalf("second retry: %d %v, want a 409 saying %q", code, res, want)
		}
		if _, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", ""); len(list["backfills"].([]any)) != 2 {
			t.Fatalf("the refused retry made a backfill: %v", list)
		}
	}
	again("is being retried by " + childID) // held in its bad partitions' runs
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	apiWaitState(t, env, tok, childID, "SUCCEEDED")
	again("has nothing left to retry")
	// The first retry's request id still answers that retry.
	if code, res := apiCall(t, env, tok, "POST", "/api/v1/backfills/"+parent+"/retry-failed", `{"retry_request_id":"r1"}`); code/100 != 2 || res["id"] != childID {
		t.Fatalf("replay of r1: %d %v", code, res)
	}
}
