package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// TestRunPageShowsEachAttemptsLog: after a retry succeeded, the failed
// attempt's log (the one that explains the failure) is still one click away
// on the run page, and in the API with ?attempt=N.
func TestRunPageShowsEachAttemptsLog(t *testing.T) {
	env, eng := pgEnvWith(t, `
assets:
  l.retry:
    partitions: {daily: {start: "2025-01-01"}}
    retries: {max_attempts: 2, backoff: 1ms}
    executor:
      command: ['echo "output of attempt $TESSERA_ATTEMPT"; test "$TESSERA_ATTEMPT" != 1']
      shell: true
`, true)
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
	resp, err = c.Get(env.URL + "/api/v1/runs/" + id + "?attempt=9")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("api ?attempt=9: %d, want 400", resp.StatusCode)
	}
}
