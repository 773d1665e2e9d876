package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// TestDemoShowsFinalFailureAndRetry: a fresh `serve` of the embedded demo
// launches a backfill of crm.accounts_snapshot that ends FAILED for good on
// wonka (its fail_keys fail both attempts), whose run log has the demo's
// lines; Retry failed then rebuilds wonka and the parent reads recovered.
// A second start on the same database launches nothing more.
func TestDemoShowsFinalFailureAndRetry(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServerWith(t, "")
	var id string
	testkit.Eventually(t, 60*time.Second, "the demo's crm.accounts_snapshot backfill ends FAILED", func() bool {
		code, out, _ := s.cli(t, "backfill", "list", "--json")
		var list struct{ Backfills []map[string]any }
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			return false
		}
		for _, b := range list.Backfills {
			if strings.Contains(b["title"].(string), "crm.accounts_snapshot") && b["state"] == "FAILED" {
				id = b["id"].(string)
				return true
			}
		}
		return false
	})
	code, out, errOut := s.cli(t, "backfill", "chunks", id, "--json")
	if code != 0 {
		t.Fatalf("chunks: %d %s", code, errOut)
	}
	var page struct{ Chunks []map[string]any }
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("chunks --json: %v: %s", err, out)
	}
	chunks := page.Chunks
	var failed []string
	for _, c := range chunks {
		if c["state"] == "failed" {
			failed = append(failed, c["first_key"].(string))
		}
	}
	if len(failed) != 1 || failed[0] != "wonka" {
		t.Fatalf("failed chunks %v, want exactly wonka's", failed)
	}
	var run map[string]any
	for _, c := range chunks {
		if c["first_key"] == "wonka" {
			code, out, _ = s.cli(t, "backfill", "run", c["id"].(string), "--json")
			if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
				t.Fatalf("run: %d %s", code, out)
			}
		}
	}
	logTail, _ := run["log_tail"].(string)
	if !strings.Contains(logTail, "wonka: ERROR: source export not found") || !strings.Contains(logTail, "demo: attempt 2 of run") {
		t.Errorf("wonka's run log: %q, want the demo's lines of its last attempt", logTail)
	}
	code, out, errOut = s.cli(t, "backfill", "retry-failed", id, "--wait", "--json")
	if code != 0 {
		t.Fatalf("retry-failed --wait: %d %q %q", code, out, errOut)
	}
	var parent map[string]any
	if code, out, _ = s.cli(t, "backfill", "get", id, "--json"); code != 0 || json.Unmarshal([]byte(out), &parent) != nil || parent["recovered_by"] == nil {
		t.Errorf("get --json after the retry: %d %q, want recovered_by", code, out)
	}
}
