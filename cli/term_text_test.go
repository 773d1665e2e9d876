package cli_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// TestCLIShowsStoredControlCharactersEscaped: text that users and pipelines
// stored reaches the terminal with its control characters shown as Go
// escapes, never raw. A command executor fails with an error (its report)
// and a log that hold "\x1b]0;pwned\x07" (retitles the terminal) and
// "\x1b[2J" (clears it); a backfill's title and a reported failure's error
// hold what the API lets through (U+202E, which turns the rest of the line
// around). Every command that prints them prints no ESC, BEL or
// U+202E, and shows the escaped form; --json stays JSON, as stored.
func TestCLIShowsStoredControlCharactersEscaped(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	script := filepath.Join(t.TempDir(), "fail.sh")
	os.WriteFile(script, []byte(`#!/bin/sh
printf 'log \033]0;pwned\007 \033[2J\n'
printf '{"partition": "only", "status": "failed", "error": "boom \\u001b]0;pwned\\u0007 \\u001b[2J"}\n' > "$TESSERA_REPORT"
exit 1
`), 0o755)
	s := startServerWith(t, `
assets:
  t.esc:
    partitions: {static: [only]}
    retries: {max_attempts: 1, backoff: 1s}
    executor: {command: [`+script+`]}
  t.daily:
    partitions: {daily: {start: 2025-01-01}}
    executor: {demo: {duration: 1ms}}
`)
	resp, body := testkit.APIRequest(t, s.URL, s.Token, "POST", "/api/v1/backfills",
		`{"assets": ["t.esc"], "selector": {"type": "explicit", "keys": ["only"]}, "title": "nightly \u202eevil"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, body)
	}
	id := body.(map[string]any)["id"].(string)
	resp, body = testkit.APIRequest(t, s.URL, s.Token, "POST", "/api/v1/materializations",
		`{"asset": "t.daily", "partition": "2025-01-02", "status": "failed", "error": "disk\tfull \u202ereversed"}`)
	if resp.StatusCode >= 300 {
		t.Fatalf("report: %d %v", resp.StatusCode, body)
	}
	var runID string
	testkit.Eventually(t, 30*time.Second, "the backfill's run to fail", func() bool {
		_, out, _ := s.cli(t, "backfill", "runs", "--json")
		var runs struct {
			Runs []struct{ ID, State string }
		}
		json.Unmarshal([]byte(out), &runs)
		if len(runs.Runs) == 1 && runs.Runs[0].State == "failed" {
			runID = runs.Runs[0].ID
			return true
		}
		return false
	})

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"backfill", "list"}, []string{`nightly \u202eevil`}},
		{[]string{"backfill", "get", id}, []string{`nightly \u202eevil`}},
		{[]string{"backfill", "run", runID}, []string{`boom \x1b]0;pwned\a \x1b[2J`, `log \x1b]0;pwned\a \x1b[2J`}},
		{[]string{"asset", "partitions", "t.esc"}, []string{`boom \x1b]0;pwned\a \x1b[2J`}},
		{[]string{"asset", "partitions", "t.daily", "--status", "failed"}, []string{`disk full \u202ereversed`}},
	} {
		code, out, errOut := s.cli(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %q %q", tc.args, code, out, errOut)
		}
		if i := strings.IndexAny(out+errOut, "\x1b\x07\u202e"); i >= 0 {
			t.Errorf("%v printed a raw control character at byte %d:\n%q", tc.args, i, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v does not show %s:\n%s", tc.args, w, out)
			}
		}
	}
	// --json is JSON, which escapes the control characters itself, and
	// has the text as stored.
	code, out, _ := s.cli(t, "backfill", "get", id, "--json")
	var b struct{ Title string }
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Title != "nightly \u202eevil" {
		t.Errorf("backfill get --json: exit %d, title %q:\n%s", code, b.Title, out)
	}
}
